// TP-communication overlap as Transformer Engine's userbuffers run it (--tp-comm-overlap): ring
// exchange, pipelined and bulk overlaps per GEMM, with FP8 buffers.
// Details: docs/models.md, "TP-communication overlap".

#include <string>

#include "stepsim/ops/fp8_ops.hpp"
#include "stepsim/ops/layer_ops.hpp"

namespace stepsim::detail {

namespace {

std::string named(std::string_view prefix, std::string_view suffix) {
  std::string out(prefix);
  out += suffix;
  return out;
}

/// Rows of chunk `i` of `total` split in `parts` (the remainder on the first chunks).
std::int64_t chunk_of(std::int64_t total, std::int64_t parts, std::int64_t i) {
  return total / parts + (i < total % parts ? 1 : 0);
}

/// Bytes per element of an all-gather userbuffer: 1 with FP8 (fp8_buf), else the params dtype's.
std::int64_t ag_elem_bytes(const Dims& x) { return x.fp8 ? 1 : x.e; }

/// split_overlap_ag with _aggregate: the chunk is first swapped with the neighbour of the
/// rank's pair (one chunk, waited by the first GEMM; peer_step 0), then tp / 2 steps each
/// multiply the pair of chunks held (2 * tokens / tp rows) while the next pair goes to the rank
/// two ahead and comes from the rank two back (two chunks a send/recv; peer_step 2); step i + 1
/// waits for that receive.
void aggregated_ring_exchange_gemm(OpList& ops, std::string_view gemm_name, double sm_share,
                                   std::int32_t layer, Phase phase, std::int64_t n,
                                   std::int64_t k) {
  const Dims& x = ops.dims();
  const std::int64_t chunk_bytes = x.tokens / x.t * k * ag_elem_bytes(x);
  std::int32_t exchange = ops.comm_after(
      "tp_ring_exchange", layer, phase, Stream::kTensorComm,
      P2POp{.bytes = chunk_bytes, .inter_node = false, .nccl = false, .peer_step = 0},
      ops.last_compute());
  const std::int64_t steps = x.t / 2;
  for (std::int64_t i = 0; i < steps; ++i) {
    ops.wait(exchange);
    const std::int64_t rows = chunk_of(x.tokens, x.t, 2 * i) + chunk_of(x.tokens, x.t, 2 * i + 1);
    const std::int32_t gemm = ops.linear_gemm(gemm_name, layer, phase, rows, n, k);
    ops.at(gemm).sm_share = sm_share;
    if (i + 1 < steps) {
      exchange = ops.comm_after(
          "tp_ring_exchange", layer, phase, Stream::kTensorComm,
          P2POp{.bytes = 2 * chunk_bytes, .inter_node = false, .nccl = false, .peer_step = 2}, -1);
    }
  }
}

/// split_overlap_ag: tp GEMM chunks of tokens / tp rows (output width n, input width k)
/// beside tp - 1 copy-engine exchanges of a k-wide chunk (ag_elem_bytes per element), the
/// first exchange starting with the first chunk.
void ring_exchange_gemm(OpList& ops, std::string_view gemm_name, std::string_view ub_name,
                        std::int32_t layer, Phase phase, std::int64_t n, std::int64_t k) {
  const Dims& x = ops.dims();
  if (x.ub(ub_name).aggregate) {
    aggregated_ring_exchange_gemm(ops, gemm_name, x.ub(ub_name).sm_share, layer, phase, n, k);
    return;
  }
  const std::int32_t start = ops.last_compute();
  std::int32_t exchange = -1;
  for (std::int64_t i = 0; i < x.t; ++i) {
    const std::int64_t rows = chunk_of(x.tokens, x.t, i);
    if (exchange >= 0) ops.wait(exchange);
    const std::int32_t gemm = ops.linear_gemm(gemm_name, layer, phase, rows, n, k);
    ops.at(gemm).sm_share = x.ub(ub_name).sm_share;  // 1 unless the config sets an SM margin
    if (i + 1 < x.t) {
      // Send the chunk just multiplied, receive the next: one batched send/recv pair.
      exchange = ops.comm_after(
          "tp_ring_exchange", layer, phase, Stream::kTensorComm,
          P2POp{.bytes = rows * k * ag_elem_bytes(x), .inter_node = false, .nccl = false},
          i == 0 ? start : -1);
    }
  }
}

/// split_overlap_rs: the GEMM (tokens x n_total x k) in num_splits chunks of output features
/// (userbuffers GEMM `ub_name`'s) on the SMs the reduce-scatter leaves, each chunk's
/// reduce-scatter (`elem_bytes` per element) after it; the next compute waits for the last.
/// With atomic_gemm the chunks are one atomic GEMM's (GemmOp::atomic_chunks).
void pipelined_gemm_rs(OpList& ops, std::string_view gemm_name, std::string_view ub_name,
                       std::int32_t layer, Phase phase, std::int64_t n_total, std::int64_t k,
                       std::int64_t elem_bytes) {
  const Dims& x = ops.dims();
  const Dims::UbGemm& ub = x.ub(ub_name);
  std::int32_t reduce = -1;
  for (std::int64_t i = 0; i < ub.splits; ++i) {
    const std::int64_t cols = chunk_of(n_total, ub.splits, i);
    const std::int32_t gemm = ops.linear_gemm(gemm_name, layer, phase, x.tokens, cols, k);
    ops.at(gemm).sm_share = ub.sm_share;
    if (ub.atomic) {
      // atomic_gemm_overlap_rs: one cuBLAS atomic GEMM (nvte_cublas_atomic_gemm on _math_sms
      // SMs) whose chunk i the reduce-scatter kernel waits for by counter i; the chunks come
      // out one after another at the whole GEMM's pace (hidden_size divisible by num_splits:
      // equal chunks).
      std::get<GemmOp>(ops.at(gemm).shape).atomic_chunks = ub.splits;
    }
    reduce = ops.collective("tp_ub_reduce_scatter", layer, phase, Stream::kTensorComm,
                            CollectiveOp{.kind = CollectiveKind::kReduceScatter,
                                         .group = CommGroup::kTensor,
                                         .bytes = x.tokens * cols * elem_bytes,
                                         .group_size = x.t,
                                         .nodes_spanned = x.tp_nodes,
                                         .nccl = false});
  }
  ops.wait(reduce);
}

/// CommOverlapP2PBase::split_overlap_rs: tp GEMM chunks of tokens / tp rows (output width
/// n_total, input width k) on the SMs userbuffers' `ub_name` leaves, chunk i the partial result
/// of the rows rank (tp_id + i + 1) % tp keeps, written into userbuffer chunk i; once chunk i's
/// GEMM is done (i < tp - 1) the copy engine sends it to that rank and receives rank
/// (tp_id - i - 1) % tp's partial result of this rank's rows, beside the next GEMM. The
/// last chunk is the rank's own rows. When every send and receive is done, one kernel
/// (reduce_bf16, or reduce_fp8_in_bf16_out from an FP8 buffer) sums the tp chunks it holds
/// (`elem_bytes` each) into its 16-bit output rows. TE spreads the GEMM chunks over up to three
/// compute streams (chunk i after chunk i - 2); sharing the same SMs, they are priced one after
/// another here.
void ring_exchange_gemm_rs(OpList& ops, std::string_view prefix, std::string_view gemm_name,
                           std::string_view ub_name, std::int32_t layer, Phase phase,
                           std::int64_t n_total, std::int64_t k, std::int64_t elem_bytes) {
  const Dims& x = ops.dims();
  std::int32_t previous = -1;
  std::int32_t send = -1;
  for (std::int64_t i = 0; i < x.t; ++i) {
    const std::int64_t rows = chunk_of(x.tokens, x.t, i);
    const std::int32_t gemm = ops.linear_gemm(gemm_name, layer, phase, rows, n_total, k);
    ops.at(gemm).sm_share = x.ub(ub_name).sm_share;
    if (previous >= 0) {
      // The send of chunk i - 1 waits for its GEMM (_start_comm recorded on its stream).
      send = ops.comm_after("tp_ring_reduce_scatter", layer, phase, Stream::kTensorComm,
                            P2POp{.bytes = chunk_of(x.tokens, x.t, i - 1) * n_total * elem_bytes,
                                  .inter_node = false,
                                  .nccl = false,
                                  .peer_step = static_cast<std::int32_t>(i)},
                            previous);
    }
    previous = gemm;
  }
  if (send >= 0) ops.wait(send);
  const std::int64_t rows = x.tokens / x.t;
  ops.memory(named(prefix, "_ub_reduce"), layer, phase,
             x.t * rows * n_total * elem_bytes + rows * n_total * 2);
}

CollectiveOp ub_collective(const Dims& x, CollectiveKind kind, std::int64_t bytes) {
  return CollectiveOp{.kind = kind,
                      .group = CommGroup::kTensor,
                      .bytes = bytes,
                      .group_size = x.t,
                      .nodes_spanned = x.tp_nodes,
                      .nccl = false};
}

}  // namespace

void emit_ub_ag_fprop(OpList& ops, std::string_view prefix, std::string_view gemm_name,
                      std::int32_t layer, Phase phase, std::int64_t out_n, std::int64_t in_k) {
  const Dims& x = ops.dims();
  // fill_userbuffers_buffer_for_all_gather: the norm's output (FP8: its FP8 data) into the
  // local chunk.
  ops.memory(named(prefix, "_ub_copy"), layer, phase, 2 * x.sp_tokens * in_k * ag_elem_bytes(x));
  ring_exchange_gemm(ops, gemm_name, named(prefix, "_fprop"), layer, phase, out_n, in_k);
}

void emit_ub_rs_fprop(OpList& ops, std::string_view gemm_name, std::int32_t layer, Phase phase,
                      std::int64_t in_k) {
  const Dims& x = ops.dims();
  // proj_fprop / fc2_fprop: a 16-bit buffer unless the config gives it fp8_buf (with FP8).
  const std::string_view prefix = gemm_name.substr(0, gemm_name.find('_'));
  const std::string ub_name = named(prefix, "_fprop");
  const std::int64_t elem_bytes = x.ub(ub_name).fp8_buf ? 1 : x.e;
  if (x.ub(ub_name).ring_rs) {
    ring_exchange_gemm_rs(ops, prefix, gemm_name, ub_name, layer, phase, x.h, in_k, elem_bytes);
    return;
  }
  pipelined_gemm_rs(ops, gemm_name, ub_name, layer, phase, x.h, in_k, elem_bytes);
}

void emit_ub_row_parallel_backward(OpList& ops, std::string_view prefix,
                                   std::string_view dgrad_name, std::string_view wgrad_name,
                                   std::int32_t layer, std::int64_t in_k) {
  const Dims& x = ops.dims();
  // grad_output_preprocess: the output gradient (FP8: quantized row-wise first; "Userbuffers
  // only supports communication for one tensor usage at a time") into the local chunk.
  if (x.fp8) emit_fp8_row_grad_cast(ops, prefix, layer);
  ops.memory(named(prefix, "_dgrad_ub_copy"), layer, Phase::kBackwardInput,
             2 * x.sp_tokens * x.h * ag_elem_bytes(x));
  ring_exchange_gemm(ops, dgrad_name, named(prefix, "_dgrad"), layer, Phase::kBackwardInput, in_k,
                     x.h);
  if (x.fp8) {
    // The gathered FP8 gradient, left in the userbuffer, transposed for wgrad.
    ops.memory(named(prefix, "_grad_transpose"), layer, Phase::kBackwardWeight, x.tokens * x.h * 2);
  }
  ops.linear_gemm(wgrad_name, layer, Phase::kBackwardWeight, x.h, in_k, x.tokens);
}

void emit_ub_column_parallel_backward(OpList& ops, std::string_view prefix,
                                      std::string_view dgrad_name, std::string_view wgrad_name,
                                      std::int32_t layer, std::int64_t out_n, std::int64_t in_k,
                                      bool bias) {
  const Dims& x = ops.dims();
  if (x.fp8) emit_fp8_column_grad_cast(ops, prefix, layer, out_n);
  std::int32_t gathered = -1;
  if (x.ub_bulk_dgrad) {
    // The saved input (FP8: the norm's row-wise FP8 output) into the qkv_dgrad/fc1_dgrad
    // userbuffer, all-gathered beside the dgrad GEMM.
    const std::int64_t ab = ag_elem_bytes(x);
    ops.memory(named(prefix, "_wgrad_input_ub_copy"), layer, Phase::kBackwardWeight,
               2 * x.sp_tokens * in_k * ab);
    gathered =
        ops.collective("tp_ub_all_gather", layer, Phase::kBackwardWeight, Stream::kTensorComm,
                       ub_collective(x, CollectiveKind::kAllGather, x.tokens * in_k * ab));
  } else if (x.fp8) {
    // gather_along_first_dim of the FP8 input: waited at once and transposed on Hopper
    // (fp8_ops.cpp).
    ops.wait(ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardWeight,
                               x.tokens * in_k));
    ops.memory(named(prefix, "_input_transpose_bwd"), layer, Phase::kBackwardWeight,
               x.tokens * in_k * 2);
  } else {
    // gather_along_first_dim(async_op=True): NCCL, overlapped with the dgrad GEMM.
    gathered = ops.tp_collective(CollectiveKind::kAllGather, layer, Phase::kBackwardWeight,
                                 x.tokens * in_k * x.e);
  }
  // The input gradient leaves the GEMM 16-bit for the bulk and NCCL reduce-scatters (the
  // qkv_wgrad/fc1_wgrad buffers are not FP8).
  const std::int64_t bytes = x.tokens * in_k * x.e;
  std::int32_t reduce = -1;
  if (x.ub_rs_dgrad) {
    pipelined_gemm_rs(ops, dgrad_name, named(prefix, "_dgrad"), layer, Phase::kBackwardInput, in_k,
                      out_n, ag_elem_bytes(x));
  } else {
    const std::int32_t dgrad =
        ops.linear_gemm(dgrad_name, layer, Phase::kBackwardInput, x.tokens, in_k, out_n);
    if (x.ub_bulk_dgrad) ops.at(dgrad).sm_share = x.ub(named(prefix, "_dgrad")).sm_share;
  }
  if (!x.ub_rs_dgrad && !x.ub_bulk_wgrad) {
    // reduce_scatter_along_first_dim(async_op=True) right after the dgrad GEMM.
    reduce = ops.tp_collective(CollectiveKind::kReduceScatter, layer, Phase::kBackwardInput, bytes);
  }
  if (gathered >= 0) ops.wait(gathered);
  if (x.fp8 && x.ub_bulk_dgrad) {
    // ln_out_total.update_usage(columnwise_usage=True): the gathered FP8 input transposed.
    ops.memory(named(prefix, "_input_transpose_bwd"), layer, Phase::kBackwardWeight,
               x.tokens * in_k * 2);
  }
  if (x.ub_bulk_wgrad) {
    // The dgrad GEMM wrote into the qkv_wgrad/fc1_wgrad userbuffer; its reduce-scatter runs
    // beside the wgrad GEMM (bulk_overlap).
    reduce =
        ops.collective("tp_ub_reduce_scatter", layer, Phase::kBackwardInput, Stream::kTensorComm,
                       ub_collective(x, CollectiveKind::kReduceScatter, bytes));
  }
  const std::int32_t wgrad =
      ops.linear_gemm(wgrad_name, layer, Phase::kBackwardWeight, out_n, in_k, x.tokens);
  if (x.ub_bulk_wgrad) ops.at(wgrad).sm_share = x.ub(named(prefix, "_wgrad")).sm_share;
  // FP8 fuses the bias gradient into the gradient's cast-transpose (bgrad_quantize).
  if (bias && !x.fp8) {
    ops.memory("qkv_bias_bwd", layer, Phase::kBackwardWeight, x.tokens * out_n * x.e);
  }
  if (reduce >= 0) ops.wait(reduce);
}

}  // namespace stepsim::detail
