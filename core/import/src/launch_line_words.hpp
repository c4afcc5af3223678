#pragma once
// The words of a Megatron-LM launch line that are neither a flag nor a flag's value: a flag
// mangled on its way to the line (an em dash pasted from a web page, one hyphen instead of
// two, typographic quotes) or a stray word. Megatron-LM's argparse refuses both ("unrecognized
// arguments"); the importer must too, or the flag is silently lost. Internal to the Megatron
// importer (import_megatron_args.cpp).

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace stepsim::detail {

/// True when `word` reads as a flag written without two ASCII hyphens: it starts with a
/// Unicode dash or hyphen lookalike (U+2010..U+2015, U+2212, U+FE58, U+FE63, U+FF0D, U+00AD)
/// or with one '-' followed by a letter ("-bf16"; "-1e-4" is a number).
bool looks_like_mangled_flag(std::string_view word);

/// True for a shell control operator that ends the command (`|`, `||`, `&&`, `;`, `&`): the
/// words after it are another command's.
bool ends_command(std::string_view word);

/// The number of words a shell redirection takes (`>` FILE: 2; `2>&1`, `>log`: 1), 0 for a
/// word that is no redirection.
int redirection_words(std::string_view word);

/// The message for a word after the training script that is not a flag (the key of the error
/// is the word): why Megatron-LM refuses it and, when it looks like a flag, which ASCII
/// spelling was meant (`is_known_flag` says whether a "--name" is a flag stepsim knows).
/// nullopt when the word is acceptable: a value of a flag outside the schema (`after_open_flag`:
/// such a flag may take several values, as --data-path does) that is not itself flag-like.
std::optional<std::string> stray_word_problem(
    std::string_view word, bool after_open_flag,
    const std::function<bool(std::string_view)>& is_known_flag);

}  // namespace stepsim::detail
