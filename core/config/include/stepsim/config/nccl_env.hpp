#pragma once
// NCCL_ALGO and NCCL_PROTO, environment variables of the job, as NCCL reads them: which
// algorithms and protocols its tuning may pick, per collective function.
//
// Source: github.com/NVIDIA/nccl at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027 (2.30.7):
// src/graph/tuning.cc parseList (the syntax) and ncclTopoTuneModel (what it enables: a disabled
// algorithm or protocol gets no bandwidth); src/init.cc ncclFuncStr, ncclAlgoStr, ncclProtoStr
// (the names, in NCCL's order).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stepsim {

/// NCCL's collective functions, algorithms and protocols, in NCCL's order (src/init.cc).
inline constexpr std::array<std::string_view, 5> kNcclFuncNames = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
inline constexpr std::array<std::string_view, 7> kNcclAlgoNames = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
inline constexpr std::array<std::string_view, 3> kNcclProtoNames = {"LL", "LL128", "Simple"};
inline constexpr int kNcclFuncAllGather = 2, kNcclFuncReduceScatter = 3, kNcclFuncAllReduce = 4;

/// What NCCL_ALGO and NCCL_PROTO leave NCCL's tuning (tuning.cc: algoEnable, protoEnable):
/// per function f, bit i of algos[f] enables kNcclAlgoNames[i], bit i of protos[f]
/// kNcclProtoNames[i]. The default, every bit set, is NCCL's without the variables. (NCCL
/// keeps LL128's default apart, "2": on where its path rules allow, which they do on every
/// platform stepsim models (NVSwitch inside the node, NICs up to PXN on Hopper, PXB before);
/// listing LL128 forces it on, the same there.)
struct NcclEnabled {
  std::array<std::uint8_t, kNcclFuncNames.size()> algos = {0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
  std::array<std::uint8_t, kNcclFuncNames.size()> protos = {0x07, 0x07, 0x07, 0x07, 0x07};

  bool algo(int f, int a) const { return ((algos[static_cast<std::size_t>(f)] >> a) & 1) != 0; }
  bool proto(int f, int p) const { return ((protos[static_cast<std::size_t>(f)] >> p) & 1) != 0; }
  /// Whether NCCL_ALGO or NCCL_PROTO took anything away.
  bool restricted() const { return *this != NcclEnabled{}; }
  bool operator==(const NcclEnabled&) const = default;
};

/// Applies NCCL_ALGO's value `value` (`algorithms` true) or NCCL_PROTO's to `enabled`, as
/// parseList does: entries separated by ';', each "function:list" or, first only, a list for
/// every function; a list of names separated by ',', or "^" and the names to disable;
/// functions and names in any case. Returns "" or what NCCL refuses (it stops the
/// communicator's initialisation): the message after "NCCL_ALGO=VALUE", e.g. ": \"Rign\" is
/// not an NCCL algorithm (...); did you mean \"Ring\"?". An empty value changes nothing (NCCL
/// parses no entry).
std::string apply_nccl_enable_list(std::string_view value, bool algorithms, NcclEnabled& enabled);

/// What the job's NCCL_ALGO and NCCL_PROTO (empty: unset) leave enabled; values NCCL refuses
/// (rejected when the scenario is loaded) change nothing.
NcclEnabled nccl_enabled(std::string_view nccl_algo, std::string_view nccl_proto);

}  // namespace stepsim
