// One rank of Megatron-LM's forward_backward_pipelining_with_interleaving
// (megatron/core/pipeline_parallel/schedules.py), transcribed call for call: warm-up,
// steady 1F1B and cool-down, with and without overlap_p2p_comm (overlap_p2p_comm_warmup_flush
// off, deallocate_pipeline_outputs on, as Megatron's training sets them).
//
// Megatron does not name the tensor a receive brings: it appends it to input_tensors[chunk]
// (or output_tensor_grads[chunk]), and each chunk consumes that list in micro-batch order.
// So the j-th activation received for chunk c is micro-batch j, produced by virtual stage
// c*p + r - 1 (on rank 0 the previous rank's chunk c-1: the wrap-around); gradients likewise
// with c*p + r + 1. The tests check that every receive named this way meets exactly one send.

#include <cstddef>
#include <vector>

#include "schedule_builder.hpp"
#include "stepsim/schedule/schedule.hpp"

namespace stepsim::sim::detail {
namespace {

struct RecvDecision {
  bool recv = true;
  std::int32_t next_chunk = 0;
};

/// A FIFO of transfers posted by non-blocking calls and not yet waited on (Megatron's
/// recv_prev_wait_handles / recv_next_wait_handles).
class PendingQueue {
 public:
  explicit PendingQueue(std::size_t capacity) { items_.reserve(capacity); }
  bool empty() const { return head_ == items_.size(); }
  void push(const Transfer& t) { items_.push_back(t); }
  Transfer pop() {
    STEPSIM_ASSERT(!empty());
    return items_[head_++];
  }

 private:
  std::vector<Transfer> items_;
  std::size_t head_ = 0;
};

class InterleavedRank {
 public:
  InterleavedRank(const ScheduleParams& params, std::int32_t rank,
                  const std::vector<std::int32_t>& microbatch_table,
                  const std::vector<std::int32_t>& chunk_table, RankProgram& program)
      : p_(params.pipeline_size),
        v_(params.virtual_size),
        r_(rank),
        total_(params.microbatches * params.virtual_size),
        overlap_(params.overlap_p2p_comm),
        first_(rank == 0),
        last_(rank == params.pipeline_size - 1),
        next_rank_((rank + 1) % params.pipeline_size),
        prev_rank_((rank + params.pipeline_size - 1) % params.pipeline_size),
        mb_table_(microbatch_table),
        chunk_table_(chunk_table),
        recv_act_count_(static_cast<std::size_t>(params.virtual_size), 0),
        recv_grad_count_(static_cast<std::size_t>(params.virtual_size), 0),
        pending_recv_prev_(static_cast<std::size_t>(total_)),
        pending_recv_next_(static_cast<std::size_t>(total_)),
        b_(program, 2 * static_cast<std::size_t>(total_),
           (overlap_ ? 8 : 4) * static_cast<std::size_t>(total_) + 4) {
    warmup_ = warmup_microbatches(params, rank);
    all_warmup_ = warmup_ >= total_;
    remaining_ = total_ - warmup_;
  }

  void build() {
    // Before the warm-up: the first chunk's first input (nothing on the first stage).
    b_.call("recv_forward", true, recv_activation(!first_, 0));
    warmup();
    steady();
    cooldown();
  }

 private:
  std::int32_t chunk_id(std::int32_t k, bool forward) const {
    const std::int32_t c = chunk_table_[static_cast<std::size_t>(k % total_)];
    return forward ? c : v_ - c - 1;
  }
  std::int32_t microbatch_id(std::int32_t k) const {
    return mb_table_[static_cast<std::size_t>(k)];
  }

  /// recv_tensor_from_previous_stage: does this iteration receive for the next one, and for
  /// which chunk.
  RecvDecision recv_from_previous_stage(std::int32_t k, bool forward) const {
    RecvDecision d;
    const bool leading = forward ? first_ : last_;
    if (!leading) {
      d.next_chunk = chunk_id(k + 1, forward);
      return d;
    }
    const std::int32_t last_chunk = forward ? v_ - 1 : 0;
    if (k < p_ - 1) {
      d.recv = false;
      d.next_chunk = chunk_id(k + 1, forward);
    } else {
      d.next_chunk = chunk_id(k - (p_ - 1), forward);
    }
    if (d.next_chunk == last_chunk) d.recv = false;
    d.next_chunk += forward ? 1 : -1;
    return d;
  }

  /// The activation the forward of virtual micro-batch k sends (none from the last stage).
  OptTransfer send_activation(std::int32_t k) const {
    const std::int32_t c = chunk_id(k, true);
    if (c == v_ - 1 && last_) return std::nullopt;
    return send(TensorKind::kActivation, microbatch_id(k), c * p_ + r_, next_rank_);
  }
  /// The input gradient the backward of virtual micro-batch k sends (none from stage 0).
  OptTransfer send_gradient(std::int32_t k) const {
    const std::int32_t c = chunk_id(k, false);
    if (c == 0 && first_) return std::nullopt;
    return send(TensorKind::kGradient, microbatch_id(k), c * p_ + r_, prev_rank_);
  }
  OptTransfer recv_activation(bool recv_prev, std::int32_t chunk) {
    if (!recv_prev) return std::nullopt;
    const std::int32_t mb = recv_act_count_[static_cast<std::size_t>(chunk)]++;
    return recv(TensorKind::kActivation, mb, chunk * p_ + r_ - 1, prev_rank_);
  }
  OptTransfer recv_gradient(bool recv_next, std::int32_t chunk) {
    if (!recv_next) return std::nullopt;
    const std::int32_t mb = recv_grad_count_[static_cast<std::size_t>(chunk)]++;
    return recv(TensorKind::kGradient, mb, chunk * p_ + r_ + 1, next_rank_);
  }

  void warmup() {
    for (std::int32_t k = 0; k < warmup_; ++k) {
      RecvDecision fwd = recv_from_previous_stage(k, true);
      if (k == total_ - 1) fwd.recv = false;
      b_.compute(ActionType::kForward, microbatch_id(k), chunk_id(k, true));
      const OptTransfer out = send_activation(k);
      const bool last_warmup = k == warmup_ - 1 && !all_warmup_;
      if (last_warmup && !overlap_) {
        const OptTransfer in = recv_activation(fwd.recv, fwd.next_chunk);
        const OptTransfer grad = recv_gradient(!last_, v_ - 1);
        b_.call("send_forward_backward_recv_forward_backward", true, out, in, grad);
      } else {
        b_.call("send_forward_recv_forward", true, out, recv_activation(fwd.recv, fwd.next_chunk));
      }
      if (last_warmup && overlap_) {
        const OptTransfer grad = recv_gradient(!last_, v_ - 1);
        b_.call("send_backward_recv_backward", false, grad);
        wait_send_prev();
        if (grad) pending_recv_next_.push(*grad);
      }
    }
  }

  void steady() {
    for (std::int32_t k = 0; k < remaining_; ++k) {
      const std::int32_t fk = k + warmup_;
      const std::int32_t bk = k;
      RecvDecision fwd = recv_from_previous_stage(fk, true);
      if (k == remaining_ - 1) fwd.recv = false;
      const RecvDecision bwd = recv_from_previous_stage(bk, false);
      if (!overlap_) {
        b_.compute(ActionType::kForward, microbatch_id(fk), chunk_id(fk, true));
        b_.compute(ActionType::kBackward, microbatch_id(bk), chunk_id(bk, false));
        const OptTransfer out = send_activation(fk);
        const OptTransfer grad_out = send_gradient(bk);
        const OptTransfer in = recv_activation(fwd.recv, fwd.next_chunk);
        const OptTransfer grad_in = recv_gradient(bwd.recv, bwd.next_chunk);
        b_.call("send_forward_backward_recv_forward_backward", true, out, grad_out, in, grad_in);
        continue;
      }
      // pp_pre_forward, forward, pp_post_forward.
      if (!(chunk_id(fk, true) == 0 && first_) && !pending_recv_prev_.empty()) {
        b_.wait(pending_recv_prev_.pop());
      }
      b_.compute(ActionType::kForward, microbatch_id(fk), chunk_id(fk, true));
      const OptTransfer out = send_activation(fk);
      const OptTransfer in = recv_activation(fwd.recv, fwd.next_chunk);
      b_.call("send_forward_recv_forward", false, out, in);
      if (send_next_) b_.wait(*send_next_);
      send_next_ = out;
      if (in) pending_recv_prev_.push(*in);
      if (send_next_) {  // deallocate_pipeline_outputs: wait before freeing the output
        b_.wait(*send_next_);
        send_next_.reset();
      }
      // pp_pre_backward, backward, pp_post_backward.
      if (!(chunk_id(bk, false) == v_ - 1 && last_) && !pending_recv_next_.empty()) {
        b_.wait(pending_recv_next_.pop());
      }
      b_.compute(ActionType::kBackward, microbatch_id(bk), chunk_id(bk, false));
      const OptTransfer grad_out = send_gradient(bk);
      const OptTransfer grad_in = recv_gradient(bwd.recv, bwd.next_chunk);
      b_.call("send_backward_recv_backward", false, grad_out, grad_in);
      wait_send_prev();
      send_prev_ = grad_out;
      if (grad_in) pending_recv_next_.push(*grad_in);
    }
  }

  void cooldown() {
    if (all_warmup_) b_.call("recv_backward", true, recv_gradient(!last_, v_ - 1));
    for (std::int32_t k = remaining_; k < total_; ++k) {
      const std::int32_t c = chunk_id(k, false);
      if (!(c == v_ - 1 && last_) && k != 0 && !pending_recv_next_.empty()) {
        b_.wait(pending_recv_next_.pop());
      }
      RecvDecision bwd = recv_from_previous_stage(k, false);
      if (k == total_ - 1) bwd.recv = false;
      b_.compute(ActionType::kBackward, microbatch_id(k), c);
      const OptTransfer grad_out = send_gradient(k);
      b_.call("send_backward_recv_backward", true, grad_out,
              recv_gradient(bwd.recv, bwd.next_chunk));
    }
    wait_send_prev();
    STEPSIM_ASSERT(pending_recv_prev_.empty() && pending_recv_next_.empty());
  }

  void wait_send_prev() {
    if (send_prev_) b_.wait(*send_prev_);
    send_prev_.reset();
  }

  std::int32_t p_, v_, r_, total_;
  bool overlap_, first_, last_;
  std::int32_t next_rank_, prev_rank_;
  const std::vector<std::int32_t>& mb_table_;
  const std::vector<std::int32_t>& chunk_table_;
  std::vector<std::int32_t> recv_act_count_;
  std::vector<std::int32_t> recv_grad_count_;
  PendingQueue pending_recv_prev_;
  PendingQueue pending_recv_next_;
  OptTransfer send_next_;
  OptTransfer send_prev_;
  ProgramBuilder b_;
  std::int32_t warmup_ = 0;
  std::int32_t remaining_ = 0;
  bool all_warmup_ = false;
};

}  // namespace

void build_interleaved_rank(const ScheduleParams& params, std::int32_t rank,
                            const std::vector<std::int32_t>& microbatch_table,
                            const std::vector<std::int32_t>& chunk_table, RankProgram& program) {
  InterleavedRank(params, rank, microbatch_table, chunk_table, program).build();
}

}  // namespace stepsim::sim::detail
