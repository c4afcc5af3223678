// Text forms of a rank's program: the compute order ("F0c0 F1c0 B0c0 ...") and the whole
// program with Megatron's p2p calls, used by `stepsim schedule` and the golden tests.

#include <algorithm>
#include <string>

#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim {

std::string transfer_op_name(const Transfer& tr) {
  return std::string(tr.send ? "send_" : "recv_") +
         (tr.tensor == TensorKind::kActivation ? "act" : "grad");
}

SliceIdentity transfer_identity(std::int32_t rank, const Transfer& tr, std::int32_t pipeline_size) {
  return SliceIdentity{
      .rank = rank,
      .phase = tr.tensor == TensorKind::kActivation ? Phase::kForward : Phase::kBackwardInput,
      .microbatch = tr.microbatch,
      .chunk = tr.producer_virtual_stage / std::max(1, pipeline_size),
      .layer = -1,
      .op = transfer_op_name(tr)};
}
namespace {

void append_action(std::string& out, const Action& a) {
  out += a.type == ActionType::kForward ? 'F' : 'B';
  out += std::to_string(a.microbatch);
  out += 'c';
  out += std::to_string(a.chunk);
}

void append_transfer(std::string& out, const Transfer& t) {
  out += t.send ? 's' : 'r';
  out += t.tensor == TensorKind::kActivation ? 'A' : 'G';
  out += std::to_string(t.microbatch);
  out += '.';
  out += std::to_string(t.producer_virtual_stage);
  out += t.send ? '>' : '<';
  out += std::to_string(t.peer);
}

void append_transfers(std::string& out, std::span<const Transfer> transfers) {
  out += '[';
  bool first = true;
  for (const Transfer& t : transfers) {
    if (!first) out += ' ';
    first = false;
    append_transfer(out, t);
  }
  out += ']';
}

}  // namespace

std::string format_actions(const RankProgram& program) {
  std::string out;
  out.reserve(program.actions.size() * 6);
  bool first = true;
  for (const Action& a : program.actions) {
    if (!first) out += ' ';
    first = false;
    append_action(out, a);
  }
  return out;
}

std::string format_program(const RankProgram& program) {
  std::string out;
  out.reserve(program.items.size() * 24);
  bool first = true;
  for (const ProgramItem& item : program.items) {
    if (!first) out += ' ';
    first = false;
    if (item.kind == ProgramItem::Kind::kCompute) {
      append_action(out, item.action);
      continue;
    }
    if (!item.comm.blocking) out += '~';
    out += item.comm.name;
    append_transfers(out, item.comm.name == "wait" ? program.waits_of(item.comm)
                                                   : program.transfers_of(item.comm));
  }
  return out;
}

}  // namespace stepsim::sim
