#pragma once
// Internal to schedule*.cpp: appends compute actions and Megatron's p2p calls to one rank's
// program, leaving out calls that carry no transfer (what Megatron's edge ranks skip).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "stepsim/base/assert.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim::detail {

using OptTransfer = std::optional<Transfer>;

class ProgramBuilder {
 public:
  /// `expected_actions` and `expected_items` only size the reservations (transfers: as many
  /// as items).
  ProgramBuilder(RankProgram& program, std::size_t expected_actions, std::size_t expected_items)
      : program_(program) {
    program_.actions.reserve(expected_actions);
    program_.items.reserve(expected_items);
    program_.transfers.reserve(expected_items);
  }

  void compute(ActionType type, std::int32_t microbatch, std::int32_t chunk) {
    const Action a{type, microbatch, chunk};
    program_.actions.push_back(a);
    ProgramItem& item = program_.items.emplace_back();
    item.kind = ProgramItem::Kind::kCompute;
    item.action = a;
  }

  /// Appends Megatron's call `name` with the present transfers; nothing when none is.
  void call(const char* name, bool blocking, const OptTransfer& t0,
            const OptTransfer& t1 = std::nullopt, const OptTransfer& t2 = std::nullopt,
            const OptTransfer& t3 = std::nullopt) {
    const std::array<const OptTransfer*, 4> all{&t0, &t1, &t2, &t3};
    std::size_t n = 0;
    for (const OptTransfer* t : all) n += t->has_value() ? 1U : 0U;
    if (n == 0) return;
    ProgramItem& item = program_.items.emplace_back();
    item.kind = ProgramItem::Kind::kComm;
    item.comm.name = name;
    item.comm.blocking = blocking;
    item.comm.first = static_cast<std::uint32_t>(program_.transfers.size());
    item.comm.transfer_count = static_cast<std::uint8_t>(n);
    for (const OptTransfer* t : all) {
      if (t->has_value()) program_.transfers.push_back(**t);
    }
  }

  /// Megatron's `handle.wait()` on a transfer posted earlier by a non-blocking call.
  void wait(const Transfer& t) {
    ProgramItem& item = program_.items.emplace_back();
    item.kind = ProgramItem::Kind::kComm;
    item.comm.name = "wait";
    item.comm.blocking = true;
    item.comm.first = static_cast<std::uint32_t>(program_.transfers.size());
    item.comm.wait_count = 1;
    program_.transfers.push_back(t);
  }

 private:
  RankProgram& program_;
};

inline Transfer send(TensorKind tensor, std::int32_t microbatch, std::int32_t producer,
                     std::int32_t peer) {
  STEPSIM_ASSERT(producer >= 0);
  return Transfer{tensor, true, microbatch, producer, peer};
}

inline Transfer recv(TensorKind tensor, std::int32_t microbatch, std::int32_t producer,
                     std::int32_t peer) {
  STEPSIM_ASSERT(producer >= 0);
  return Transfer{tensor, false, microbatch, producer, peer};
}

/// Builds rank `rank` of forward_backward_pipelining_with_interleaving (schedule_interleaved.cpp).
/// `microbatch_table`/`chunk_table`: Megatron's get_schedule_table, shared by all ranks.
void build_interleaved_rank(const ScheduleParams& params, std::int32_t rank,
                            const std::vector<std::int32_t>& microbatch_table,
                            const std::vector<std::int32_t>& chunk_table, RankProgram& program);

}  // namespace stepsim::sim::detail
