#include "launch_line_words.hpp"

#include <array>
#include <cctype>
#include <span>

namespace stepsim::detail {
namespace {

// A character that people (and word processors) put where the shell wants '-'.
struct Lookalike {
  std::string_view utf8;
  std::string_view name;
};
constexpr std::array<Lookalike, 11> kDashes = {{
    {"\u2010", "a hyphen (U+2010)"},
    {"\u2011", "a non-breaking hyphen (U+2011)"},
    {"\u2012", "a figure dash (U+2012)"},
    {"\u2013", "an en dash (U+2013)"},
    {"\u2014", "an em dash (U+2014)"},
    {"\u2015", "a horizontal bar (U+2015)"},
    {"\u2212", "a minus sign (U+2212)"},
    {"\uFE58", "a small em dash (U+FE58)"},
    {"\uFE63", "a small hyphen-minus (U+FE63)"},
    {"\uFF0D", "a fullwidth hyphen-minus (U+FF0D)"},
    {"\u00AD", "a soft hyphen (U+00AD)"},
}};
constexpr std::array<Lookalike, 6> kQuotes = {{
    {"\u201C", "a left double quotation mark (U+201C)"},
    {"\u201D", "a right double quotation mark (U+201D)"},
    {"\u2018", "a left single quotation mark (U+2018)"},
    {"\u2019", "a right single quotation mark (U+2019)"},
    {"\u00AB", "a left guillemet (U+00AB)"},
    {"\u00BB", "a right guillemet (U+00BB)"},
}};

const Lookalike* leading(std::string_view word, std::span<const Lookalike> table) {
  for (const Lookalike& l : table) {
    if (word.starts_with(l.utf8)) return &l;
  }
  return nullptr;
}

// `word` without its leading hyphens, dashes and lookalike quotes: the flag's name.
std::string_view flag_name(std::string_view word) {
  while (!word.empty()) {
    if (word.front() == '-') {
      word.remove_prefix(1);
    } else if (const Lookalike* l = leading(word, kDashes)) {
      word.remove_prefix(l->utf8.size());
    } else if (const Lookalike* q = leading(word, kQuotes)) {
      word.remove_prefix(q->utf8.size());
    } else {
      break;
    }
  }
  return word;
}

}  // namespace

bool looks_like_mangled_flag(std::string_view word) {
  if (leading(word, kDashes) != nullptr) return true;
  if (word.size() < 2 || word[0] != '-' || word[1] == '-') return false;
  const auto next = static_cast<unsigned char>(word[1]);
  return std::isalpha(next) != 0 || next >= 0x80;  // "-bf16", "-—bf16"; not "-1e-4", "-.5"
}

bool ends_command(std::string_view word) {
  return word == "|" || word == "||" || word == "&&" || word == ";" || word == "&";
}

int redirection_words(std::string_view word) {
  std::size_t i = 0;
  while (i < word.size() && std::isdigit(static_cast<unsigned char>(word[i])) != 0) ++i;
  std::string_view op = word.substr(i);
  if (op.starts_with("&>")) op.remove_prefix(1);
  if (!op.starts_with(">") && !op.starts_with("<")) return 0;
  std::string_view rest = op.substr(1);
  if (rest.starts_with(">") || rest.starts_with("&")) rest.remove_prefix(1);
  return rest.empty() ? 2 : 1;
}

std::optional<std::string> stray_word_problem(
    std::string_view word, bool after_open_flag,
    const std::function<bool(std::string_view)>& is_known_flag) {
  const std::string name(flag_name(word));
  const std::string meant = "--" + name;
  const std::string known =
      !name.empty() && is_known_flag(meant) ? "; did you mean " + meant + "?" : "";
  if (const Lookalike* dash = leading(word, kDashes)) {
    return std::string(" is not a flag: it starts with ") + std::string(dash->name) +
           ", not the two ASCII hyphens of a flag (as pasted from a web page or a word "
           "processor); Megatron-LM's argparse refuses it, and stepsim would lose the flag" +
           (known.empty() ? "; write it as " + meant : known);
  }
  if (looks_like_mangled_flag(word)) {
    return " is not a flag: it starts with one hyphen, Megatron-LM's flags with two; "
           "Megatron-LM's argparse refuses it, and stepsim would lose the flag" +
           (known.empty() ? "; write it as " + meant : known);
  }
  if (const Lookalike* quote = leading(word, kQuotes)) {
    return std::string(" starts with ") + std::string(quote->name) +
           ", which the shell does not take for a quote: the word reaches Megatron-LM as it "
           "stands and its argparse refuses it (use ASCII quotes \" or ')" +
           known;
  }
  if (after_open_flag) return std::nullopt;
  return " is neither a flag nor the value of one: Megatron-LM's argparse refuses it "
         "(\"unrecognized arguments\"), and stepsim would silently leave it out" +
         (known.empty() ? std::string() : known);
}

}  // namespace stepsim::detail
