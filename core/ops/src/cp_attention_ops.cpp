// Core attention with context parallelism as Transformer Engine runs it (p2p ring, a2a,
// all-gather, hierarchical a2a+p2p).
// Details: docs/models.md, "Context-parallel attention".

#include "stepsim/ops/layer_ops.hpp"
#include "stepsim/base/assert.hpp"

namespace stepsim::detail {

namespace {

struct CpShape {
  std::int64_t b = 0, heads = 0, kv_heads = 0, d = 0;
  std::int64_t sc = 0;    ///< local tokens per sequence (s/cp)
  std::int64_t half = 0;  ///< one of the two half-chunks (s/2cp)
  std::int64_t s = 0;
  std::int64_t cp = 1;
  std::int64_t e = 2;
  DType dtype = DType::kBf16;

  std::int64_t q_bytes() const { return b * sc * heads * d * e; }        ///< local Q (or O)
  std::int64_t kv_bytes() const { return 2 * b * sc * kv_heads * d * e; }  ///< local K and V
  std::int64_t o_elems() const { return b * sc * heads * d; }
  std::int64_t lse_elems() const { return b * heads * sc; }

  AttentionOp attention(std::int64_t seq, std::int64_t seq_kv, bool causal, bool backward,
                        std::int64_t counted_scores, std::int64_t heads_here,
                        std::int64_t kv_heads_here) const {
    return AttentionOp{.batch = b,
                       .heads = heads_here,
                       .kv_heads = kv_heads_here,
                       .seq = seq,
                       .head_dim = d,
                       .causal = causal,
                       .backward = backward,
                       .dtype = dtype,
                       .seq_kv = seq_kv == seq ? 0 : seq_kv,
                       .counted_scores = counted_scores};
  }
};

CpShape cp_shape(const Dims& x) {
  CpShape c;
  c.b = x.b;
  c.heads = x.heads();
  c.kv_heads = x.groups();
  c.d = x.d;
  c.s = x.s;
  c.cp = x.cp;
  c.sc = x.s / x.cp;
  c.half = c.sc / 2;
  c.e = x.e;
  c.dtype = x.dtype;
  return c;
}

// ---- p2p: the KV ring ----

void p2p_forward(OpList& ops, const CpShape& c, std::int32_t layer, Phase phase) {
  std::int32_t received = -1;  // the transfer that brought this step's KV block
  for (std::int64_t i = 0; i < c.cp; ++i) {
    // Issued before step i's attention, on the stream that waits for step i-1's attention:
    // sends the block step i uses on to the next rank.
    std::int32_t next = -1;
    if (i < c.cp - 1) next = ops.cp_ring_step("cp_send_recv_kv", layer, phase, c.kv_bytes());
    if (received >= 0) ops.wait(received);
    if (i == 0) {
      ops.compute("attn_cp_diagonal", layer, phase,
                  c.attention(c.sc, c.sc, true, false, 0, c.heads, c.kv_heads));
    } else {
      // Rank 0's later steps: the second half of Q against the whole received block, which
      // stands for the rank's sc x sc block of the score matrix in Megatron's count.
      ops.compute("attn_cp_upper", layer, phase,
                  c.attention(c.half, c.sc, false, false, c.sc * c.sc, c.heads, c.kv_heads));
    }
    received = next;
  }
  // softmax_lse corrections of steps 1..cp-1 (rank 0: second halves; fp32 read twice, written
  // once) and the output corrections: init from step 0 (read O, write fp32), the second half
  // of every later step (read O, read and write fp32), then the cast back to the params dtype.
  const std::int64_t steps = c.cp - 1;
  ops.memory("attn_cp_lse_correction", layer, phase, steps * (c.lse_elems() / 2) * 12);
  ops.memory("attn_cp_out_correction", layer, phase,
             c.o_elems() * (c.e + 4) + steps * (c.o_elems() / 2) * (c.e + 8) +
                 c.o_elems() * (4 + c.e));
}

void p2p_backward(OpList& ops, const CpShape& c, std::int32_t layer) {
  const Phase ph = Phase::kBackwardInput;
  std::int32_t received = -1;
  for (std::int64_t i = 0; i < c.cp; ++i) {
    // Step 0 sends KV, middle steps KV and the dKV accumulator, the last step dKV only.
    const bool both = i > 0 && i < c.cp - 1;
    const std::int32_t sent =
        ops.cp_ring_step(both ? "cp_send_recv_kv_dkv" : (i == 0 ? "cp_send_recv_kv" : "cp_send_recv_dkv"),
                         layer, ph, (both ? 2 : 1) * c.kv_bytes());
    if (received >= 0) ops.wait(received);
    if (i == c.cp - 1) {
      ops.compute("attn_cp_diagonal_bwd", layer, ph,
                  c.attention(c.sc, c.sc, true, true, 0, c.heads, c.kv_heads));
      // dq.add_(dq_): the whole local dQ.
      ops.memory("attn_cp_dq_add", layer, ph, c.q_bytes() * 3);
    } else {
      ops.compute("attn_cp_upper_bwd", layer, ph,
                  c.attention(c.half, c.sc, false, true, c.sc * c.sc, c.heads, c.kv_heads));
      // dq[1].copy_/add_(dq_): the second half of dQ.
      ops.memory("attn_cp_dq_add", layer, ph, c.q_bytes() / 2 * (i == 0 ? 2 : 3));
    }
    // Wait for the dKV accumulator, then add this step's dK and dV into it.
    ops.wait(sent);
    ops.memory("attn_cp_dkv_add", layer, ph, c.kv_bytes() * (i == 0 ? 2 : 3));
    received = sent;
  }
}

// ---- a2a: Ulysses ----

/// Pack, all-to-all, reorder of `bytes` per rank (one collective for the tensors TE sends
/// back to back), over the CP group or, with a2a+p2p, its a2a level.
void a2a_exchange(OpList& ops, std::string_view name, std::int32_t layer, Phase phase,
                  std::int64_t bytes) {
  ops.memory("attn_cp_a2a_pack", layer, phase, 2 * bytes);
  ops.wait(ops.dims().cp_comm == CpCommType::kA2aP2p
               ? ops.cp_a2a_collective(name, layer, phase, bytes)
               : ops.cp_collective(name, CollectiveKind::kAllToAll, layer, phase, bytes));
  ops.memory("attn_cp_a2a_reorder", layer, phase, 2 * bytes);
}

void a2a_forward(OpList& ops, const CpShape& c, std::int32_t layer, Phase phase) {
  a2a_exchange(ops, "cp_a2a_qkv", layer, phase, c.q_bytes() + c.kv_bytes());
  ops.compute("attn_cp_a2a", layer, phase,
              c.attention(c.s, c.s, true, false, 0, c.heads / c.cp, c.kv_heads / c.cp));
  a2a_exchange(ops, "cp_a2a_out", layer, phase, c.q_bytes());
}

void a2a_backward(OpList& ops, const CpShape& c, std::int32_t layer) {
  const Phase ph = Phase::kBackwardInput;
  a2a_exchange(ops, "cp_a2a_dout", layer, ph, c.q_bytes());
  ops.compute("attn_cp_a2a_bwd", layer, ph,
              c.attention(c.s, c.s, true, true, 0, c.heads / c.cp, c.kv_heads / c.cp));
  a2a_exchange(ops, "cp_a2a_dqkv", layer, ph, c.q_bytes() + c.kv_bytes());
}

// ---- allgather ----

/// All-gather of K and V over the CP group and the reorder of the 2cp chunks.
void gather_kv(OpList& ops, const CpShape& c, std::int32_t layer, Phase phase) {
  const std::int64_t gathered = c.cp * c.kv_bytes();
  ops.wait(ops.cp_collective("cp_all_gather_kv", CollectiveKind::kAllGather, layer, phase,
                             gathered));
  ops.memory("attn_cp_kv_reorder", layer, phase, 2 * gathered);
}

void allgather_steps(OpList& ops, const CpShape& c, std::int32_t layer, Phase phase,
                     bool backward) {
  // Rank 0 holds chunks 0 and 2cp-1: its queries see the first half-chunk, then the whole
  // sequence. Each step stands for its queries' rows of the full score matrix.
  const std::int64_t chunks[2] = {0, 2 * c.cp - 1};
  for (const std::int64_t chunk : chunks) {
    ops.compute(backward ? "attn_cp_ag_bwd" : "attn_cp_ag", layer, phase,
                c.attention(c.half, (chunk + 1) * c.half, true, backward, c.half * c.s, c.heads,
                            c.kv_heads));
  }
}

void allgather_forward(OpList& ops, const CpShape& c, std::int32_t layer, Phase phase) {
  gather_kv(ops, c, layer, phase);
  allgather_steps(ops, c, layer, phase, false);
  // out_f16[i].copy_(out_per_step[i]) for both halves.
  ops.memory("attn_cp_ag_out_copy", layer, phase, 2 * c.q_bytes());
}

void allgather_backward(OpList& ops, const CpShape& c, std::int32_t layer) {
  const Phase ph = Phase::kBackwardInput;
  gather_kv(ops, c, layer, ph);
  // dk, dv = zeros over the gathered sequence; every step adds its slice into them.
  const std::int64_t gathered = c.cp * c.kv_bytes();
  ops.memory("attn_cp_ag_dkv_zero", layer, ph, gathered);
  allgather_steps(ops, c, layer, ph, true);
  ops.memory("attn_cp_ag_dkv_add", layer, ph, 3 * c.kv_bytes() * (2 * c.cp + 1) / 2);
  // Reorder the chunks back, then reduce-scatter dK and dV to their owners.
  ops.memory("attn_cp_dkv_reorder", layer, ph, 2 * gathered);
  ops.wait(ops.cp_collective("cp_reduce_scatter_dkv", CollectiveKind::kReduceScatter, layer, ph,
                             gathered));
}

// ---- a2a+p2p: the all-to-all level around the ring ----

/// The ring's shape after the a2a level: H/A heads (G/A key/value heads) of s/P tokens per
/// sequence, a ring of P ranks.
CpShape ring_shape(const CpShape& c, const Dims& x) {
  CpShape r = c;
  r.heads = c.heads / x.cp_a2a;
  r.kv_heads = c.kv_heads / x.cp_a2a;
  r.cp = x.cp_p2p;
  r.sc = c.s / x.cp_p2p;
  r.half = r.sc / 2;
  return r;
}

void hierarchical_forward(OpList& ops, const CpShape& c, std::int32_t layer, Phase phase) {
  a2a_exchange(ops, "cp_a2a_qkv", layer, phase, c.q_bytes() + c.kv_bytes());
  p2p_forward(ops, ring_shape(c, ops.dims()), layer, phase);
  a2a_exchange(ops, "cp_a2a_out", layer, phase, c.q_bytes());
}

void hierarchical_backward(OpList& ops, const CpShape& c, std::int32_t layer) {
  const Phase ph = Phase::kBackwardInput;
  a2a_exchange(ops, "cp_a2a_dout", layer, ph, c.q_bytes());
  p2p_backward(ops, ring_shape(c, ops.dims()), layer);
  a2a_exchange(ops, "cp_a2a_dqkv", layer, ph, c.q_bytes() + c.kv_bytes());
}

}  // namespace

void emit_cp_attention_forward(OpList& ops, std::int32_t layer, Phase phase) {
  const CpShape c = cp_shape(ops.dims());
  switch (ops.dims().cp_comm) {
    case CpCommType::kP2p: return p2p_forward(ops, c, layer, phase);
    case CpCommType::kA2a: return a2a_forward(ops, c, layer, phase);
    case CpCommType::kAllGather: return allgather_forward(ops, c, layer, phase);
    case CpCommType::kA2aP2p: return hierarchical_forward(ops, c, layer, phase);
  }
  STEPSIM_UNREACHABLE("unknown cp_comm_type");
}

void emit_cp_attention_backward(OpList& ops, std::int32_t layer) {
  const CpShape c = cp_shape(ops.dims());
  switch (ops.dims().cp_comm) {
    case CpCommType::kP2p: return p2p_backward(ops, c, layer);
    case CpCommType::kA2a: return a2a_backward(ops, c, layer);
    case CpCommType::kAllGather: return allgather_backward(ops, c, layer);
    case CpCommType::kA2aP2p: return hierarchical_backward(ops, c, layer);
  }
  STEPSIM_UNREACHABLE("unknown cp_comm_type");
}

}  // namespace stepsim::detail
