// Forward kernels of one decoder-only transformer micro-batch (eager form).
//
// Saved-tensor bookkeeping follows Korthikanti et al. 2022, Sec. 4.1: for a
// GPT layer with dropout, LayerNorm, GeLU and naive attention at 16 bits the
// kernels below save 34*s*b*h + 5*a*s^2*b bytes (11 sbh attention + 5 a s^2 b
// scores, 19 sbh MLP, 4 sbh LayerNorm inputs); see the comment at each kernel.
#include <algorithm>
#include <cmath>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/graph/memory_kernels.hpp"
#include "ridgeline/spec/precision.hpp"

namespace ridgeline::graph {

size_t Graph::forward_flash() const {
  size_t flash = kernels.size();
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].phase == spec::Phase::kForward && kernels[i].op == Op::kFlashAttn) flash = i;
  return flash;
}

int seq_len(const spec::ModelSpec& model, const spec::MicrobatchPlan& plan) {
  return plan.seq_len > 0 ? plan.seq_len : model.max_seq_len;
}

namespace {

struct Dims {
  double b, s, T, Tp;  // micro-batch, local sequence, tokens on this GPU, tokens of pointwise ops (SP: T/t)
  double h, a, g, d, f, V, e, e_w;
  double t;
};

/// A streaming pointwise kernel in `k` (a fresh Kernel).
void fill_pointwise(Kernel& k, std::string_view name, Op op, FuseGroup group, double read, double write,
                    double flops, Dtype dt) {
  k.name = name;
  k.op = op;
  k.cls = KernelClass::kElementwise;
  k.dtype = dt;
  k.group = group;
  k.flags = kPointwise | kLayer;
  k.read_bytes = read;
  k.write_bytes = write;
  k.chain_bytes = write;
  k.flops = flops;
}

/// A GEMM in `k` (a fresh Kernel).
void fill_gemm(Kernel& k, std::string_view name, Op op, double m, double n, double kk, double batch, const Dims& D,
               Dtype dt, bool weight) {
  k.name = name;
  k.op = op;
  k.cls = KernelClass::kGemm;
  k.dtype = dt;
  k.flags = kLayer | (weight ? kHasWeight : 0);
  k.gemm = {m, n, kk, batch};
  k.flops = 2.0 * m * n * kk * batch;
  k.model_flops = k.flops;
  const double b_bytes = weight ? D.e_w : D.e;
  k.read_bytes = batch * (m * kk * D.e + kk * n * b_bytes);
  k.write_bytes = batch * m * n * D.e;
  k.chain_bytes = k.write_bytes;
  k.weight_params = weight ? n * kk : 0;
}

}  // namespace

void build_forward(const spec::ModelSpec& M, const spec::MicrobatchPlan& P, Graph& G) {
  G.kernels.clear();
  const auto& par = P.parallel;
  const double t = std::max(1, par.tp);
  Dims D{};
  D.t = t;
  D.b = P.micro_batch;
  D.s = static_cast<double>(seq_len(M, P)) / std::max(1, par.cp);
  D.T = D.b * D.s;
  D.Tp = par.sp ? D.T / t : D.T;
  D.h = M.hidden;
  D.a = M.heads / t;
  D.g = std::max(1.0, M.kv_heads / t);
  D.d = M.head_dim;
  D.f = M.ffn_hidden / t;
  D.V = M.vocab / t;
  const spec::PrecisionPolicy pol = spec::precision_policy(P);
  D.e = pol.activation_bytes;
  D.e_w = pol.weight_bytes;
  const Dtype act = pol.activation;
  const Dtype gemm_dt = pol.linear_gemm;
  G.act_bytes = D.e;
  G.tokens = D.T;
  G.attention_qkv_bytes = 0;  // set by the fused-attention pass
  // The busiest stage's layers (uneven stages: spec::stage_layers); it sets the pipeline's pace.
  const int busiest = spec::max_stage_layers(M.layers, par.pp, par.first_stage_layers, par.last_stage_layers);
  // Multi-token prediction (DeepSeek-AI 2024, DeepSeek-V3 Sec. 2.2): each
  // depth is one more transformer block of the model's (MoE) layer type,
  // counted with the layers; its projection, norms and second pass of the
  // shared head follow the head. The module is the last stage's (its
  // parameters and activations: techniques::local_params, memory::estimate).
  // The graph is the busiest stage's layers with both ends charged to it;
  // the last stage with the MTP blocks is the busiest where its layers and
  // the blocks are at least the other stages' most (without PP always;
  // DeepSeek-V3's 61 layers over 16 stages, the first holding 1: the last
  // 4 and the block against 4), and the graph is then its layers and the
  // blocks; else the MTP module runs within the pace another stage sets.
  const int mtp = spec::timed_mtp_layers(M.layers, M.mtp_layers, par.pp, par.first_stage_layers,
                                         par.last_stage_layers);
  const int main_layers =
      mtp > 0 ? spec::stage_layers(M.layers, par.pp, par.first_stage_layers, par.last_stage_layers,
                                   std::max(1, par.pp) - 1)
              : busiest;
  G.layers = main_layers + mtp;
  G.mtp_layers = mtp;

  const double L = G.layers;
  // An MoE model's dense first layers: those the busiest stage holds, the
  // stages before it taking the rest (with PP = 1, all of them; under PP the
  // first stages take them and the busiest is counted all-MoE).
  G.dense_layers = M.is_moe() ? std::clamp(M.moe.dense_layers - (M.layers - main_layers), 0, main_layers) : 0;
  const double L_dense = G.dense_layers;
  const double L_mlp = L - L_dense;  // the main MLP's layers: all (dense model) or the MoE ones
  const double Tph = D.Tp * D.h;
  const bool drop = M.dropout > 0.0;
  const bool bias = M.bias;
  const bool causal = P.attention_flops == spec::AttentionFlops::kCausal;
  auto& ks = G.kernels;
  // Built in place in the graph, `count` instances (no temporary to copy: a
  // kernel is 208 bytes and a graph is rebuilt for every evaluation). The
  // reference holds until the next kernel is added.
  auto add = [&](double count) -> Kernel& {
    Kernel& k = ks.emplace_back();
    k.count = count;
    return k;
  };
  auto add_pointwise = [&](double count, std::string_view name, Op op, FuseGroup group, double read, double write,
                           double flops) -> Kernel& {
    Kernel& k = add(count);
    fill_pointwise(k, name, op, group, read, write, flops, act);
    return k;
  };
  // Squared ReLU's second kernel, relu(x) then its square (transformers'
  // ReLUSquaredActivation: F.relu, then torch.square; Megatron-Core's
  // squared_relu, torch.pow(F.relu(x), 2), under @jit_fuser, which fuses
  // the two: megatron/core/activations.py; NeMo 1.x's likewise). It reads
  // the ReLU's output and writes the down-projection's input, in the
  // activation's fusion group (one kernel at the fused level, as jit_fuser
  // makes it; two eager). Autograd's pow saves its input, the tensor the
  // ReLU saved: nothing more is held.
  auto add_square = [&](double count, std::string_view name, double elements) -> Kernel& {
    Kernel& k = add_pointwise(count, name, Op::kAct, FuseGroup::kBiasAct, elements * D.e, elements * D.e, elements);
    k.saved_bytes = 0;
    return k;
  };
  auto add_gemm = [&](double count, std::string_view name, Op op, double m, double n, double kk, double batch,
                      Dtype dt, bool weight) -> Kernel& {
    Kernel& k = add(count);
    fill_gemm(k, name, op, m, n, kk, batch, D, dt, weight);
    return k;
  };

  // Embedding lookup (first pipeline stage): reads T rows of h, writes T x h.
  {
    Kernel& k = add(1);
    k.name = "embedding";
    k.op = Op::kEmbed;
    k.cls = KernelClass::kEmbedding;
    k.dtype = act;
    k.read_bytes = D.T * 8 + Tph * D.e;
    k.write_bytes = Tph * D.e;
    k.saved_bytes = D.T * 8;  // token ids
    if (M.position == spec::Position::kLearned) k.read_bytes += Tph * D.e, k.launches = 2;
  }

  // ---- one decoder layer (count = layers on this GPU) ----
  auto norm = [&](std::string_view name, Op op, FuseGroup grp) {
    Kernel& k = add(L);
    k.name = name;
    k.op = op;
    k.cls = KernelClass::kNorm;
    k.dtype = act;
    k.group = grp;
    k.flags = kLayer | kPointwise;
    const double rows = D.Tp;  // SP: the norm runs on the local tokens
    if (M.norm == spec::Norm::kLayerNorm) {
      // PyTorch's native_layer_norm is one kernel even in eager mode; its
      // autograd node saves the input and the fp32 mean and rstd per row
      // (as Apex's and Transformer Engine's fused LayerNorms do): 2 sbh
      // (Korthikanti) + 8 bytes per row.
      k.read_bytes = Tph * D.e + 2 * D.h * D.e;
      k.write_bytes = Tph * D.e + 2 * rows * 4;
      k.flops = 8 * Tph;
      k.saved_bytes = Tph * D.e + 2 * rows * 4;
    } else if (spec::rms_norm_of(P) == spec::RmsNormImpl::kComposite) {
      // Eager RMSNorm (Hugging Face LlamaRMSNorm): x.float(), pow(2), mean,
      // x * rsqrt, .to(dtype), * weight: six kernels, reads 2e+16 and writes
      // 2e+12 bytes per element (e = activation width). Autograd saves the
      // fp32 x (pow and mul share it), the fp32 rsqrt per row and the
      // normalized x in the input dtype (weight * x saves x for the weight's
      // gradient): 4 + e bytes per element, 4 per row.
      k.read_bytes = Tph * (2 * D.e + 16);
      k.write_bytes = Tph * (2 * D.e + 12);
      k.launches = 6;
      k.flops = 5 * Tph;
      k.saved_bytes = Tph * (4 + D.e) + rows * 4;
    } else {
      // One kernel (Apex FusedRMSNorm, Transformer Engine, torch.nn.RMSNorm's
      // native kernel; what torch.compile makes of the eager chain): reads x
      // and the weight, writes y and the fp32 rstd per row, and saves x and
      // the rstd. PyTorch's native kernel streams at the framework's norm
      // rate (it reads each row twice), the others tuned
      // (techniques::apply_fusion).
      k.read_bytes = Tph * D.e + D.h * D.e;
      k.write_bytes = Tph * D.e + rows * 4;
      k.flops = 5 * Tph;
      k.saved_bytes = Tph * D.e + rows * 4;
    }
    k.chain_bytes = Tph * D.e;
    return &k;
  };

  norm("norm1", Op::kNorm1, FuseGroup::kNorm1);
  // Attention head dimensions: Q and K d_qk, V and O d_v; K/V heads g_kv.
  const bool mla = M.is_mla();
  const double d_qk = mla ? M.mla.qk_nope_head_dim + M.mla.qk_rope_head_dim : D.d;
  const double d_v = mla ? M.mla.v_head_dim : D.d;
  const double g_kv = mla ? D.a : D.g;
  if (mla) {
    // Multi-head latent attention (DeepSeek-V2 Sec. 2.1; DeepSeek-V3
    // inference/model.py, class MLA). The down-projections and the latents'
    // RMSNorms are replicated under TP (every rank runs them on all its
    // tokens), the up-projections and W_O split by heads. W_DQ (or W_Q) saves
    // the layer's normed input, 2 sbh (SP: /t), which W_DKV shares; each
    // up-projection saves its normed latent.
    const auto& A = M.mla;
    const double r = A.qk_rope_head_dim, nope = A.qk_nope_head_dim;
    // A latent's RMSNorm over all T rows of `width` (not sequence-parallel),
    // eager or fused as the layer's norms (see `norm` above).
    auto latent_norm = [&](std::string_view name, double width) {
      Kernel& k = add(L);
      k.name = name;
      k.op = Op::kLatentNorm;
      k.cls = KernelClass::kNorm;
      k.dtype = act;
      k.flags = kLayer | kPointwise;
      const double x = D.T * width;
      if (spec::rms_norm_of(P) == spec::RmsNormImpl::kComposite && M.norm == spec::Norm::kRmsNorm) {
        k.read_bytes = x * (2 * D.e + 16);
        k.write_bytes = x * (2 * D.e + 12);
        k.launches = 6;
        k.saved_bytes = x * (4 + D.e) + D.T * 4;
      } else {
        k.read_bytes = x * D.e + width * D.e;
        k.write_bytes = x * D.e + D.T * 4;
        k.saved_bytes = x * D.e + D.T * 4;
      }
      k.flops = 5 * x;
      k.chain_bytes = x * D.e;
    };
    if (A.q_lora_rank > 0) {
      const double rq = A.q_lora_rank;
      Kernel& dq = add_gemm(L, "mla_q_down_proj", Op::kQDown, D.T, rq, D.h, 1, gemm_dt, true);
      dq.model_flops = dq.flops / t;  // replicated: each TP rank credits its share
      dq.saved_bytes = Tph * D.e;
      latent_norm("mla_q_norm", rq);
      Kernel& uq = add_gemm(L, "mla_q_up_proj", Op::kQUp, D.T, D.a * d_qk, rq, 1, gemm_dt, true);
      uq.saved_bytes = D.T * rq * D.e;
    } else {
      Kernel& wq = add_gemm(L, "mla_q_proj", Op::kQUp, D.T, D.a * d_qk, D.h, 1, gemm_dt, true);
      wq.saved_bytes = Tph * D.e;
    }
    const double rkv = A.kv_lora_rank;
    // Its input is W_DQ's (saved once, there).
    Kernel& dkv = add_gemm(L, "mla_kv_down_proj", Op::kKvDown, D.T, rkv + r, D.h, 1, gemm_dt, true);
    dkv.model_flops = dkv.flops / t;
    latent_norm("mla_kv_norm", rkv);
    Kernel& ukv = add_gemm(L, "mla_kv_up_proj", Op::kKvUp, D.T, D.a * (nope + d_v), rkv, 1, gemm_dt, true);
    ukv.saved_bytes = D.T * rkv * D.e;
    // RoPE on the queries' rope part (a heads) and the one shared rope key.
    const double rot = D.T * (D.a + 1) * r;
    add_pointwise(L, "rope", Op::kRope, FuseGroup::kQkvBiasRope, rot * D.e, rot * D.e, 6 * rot);
    // K assembled per head: [k_nope | k_rope broadcast], written a d_qk wide.
    add_pointwise(L, "mla_k_concat", Op::kKvConcat, FuseGroup::kNone, D.T * (D.a * nope + r) * D.e,
                  D.T * D.a * d_qk * D.e, 0);
  } else {
    // QKV projection: N = (a + 2g) d. Saves its input: 2 sbh (SP: sharded, /t).
    // With more TP ranks than KV heads each rank computes one whole KV head
    // (g = 1, replicated); the model FLOPs credit its share, 2 g_model / t heads.
    const double n = (D.a + 2 * D.g) * D.d;
    Kernel& k = add_gemm(L, "qkv_proj", Op::kQkv, D.T, n, D.h, 1, gemm_dt, true);
    k.model_flops = 2.0 * D.T * D.h * (D.a + 2.0 * M.kv_heads / t) * D.d;
    k.saved_bytes = Tph * D.e;
    if (bias)
      add_pointwise(L, "qkv_bias", Op::kQkvBias, FuseGroup::kQkvBiasRope, D.T * n * D.e + n * D.e, D.T * n * D.e,
                    D.T * n);
    if (M.position == spec::Position::kRope) {
      const double qk = D.T * (D.a + D.g) * D.d;
      add_pointwise(L, "rope", Op::kRope, FuseGroup::kQkvBiasRope, qk * D.e, qk * D.e, 6 * qk);
    }
  }
  // Attention core, naive: QK^T, scale, mask, softmax, dropout, PV.
  {
    // With context parallelism each rank holds s/cp queries against all s keys.
    const double sk = D.s * std::max(1, par.cp);
    const double scores = D.b * D.a * D.s * sk;  // elements of the score matrix
    const double q = D.T * D.a * d_qk, kv = D.T * g_kv * d_qk;
    Kernel& qk = add_gemm(L, "attn_qk", Op::kQk, D.s, sk, d_qk, D.b * D.a, act, false);
    qk.flags |= kAttnCore;
    qk.read_bytes = (q + kv) * D.e;
    qk.write_bytes = scores * D.e;
    qk.chain_bytes = qk.write_bytes;
    qk.saved_bytes = (q + kv) * D.e;  // Q and K: 4 sbh
    if (causal) qk.model_flops = qk.flops / 2;
  }
  // The rest of the naive core; a fused attention kernel replaces the whole
  // core (techniques::apply_attention, which reads the first core kernel's
  // type and count only), so for one the rest is not made.
  if (P.attention == spec::AttentionKind::kNaive) {
    const double sk = D.s * std::max(1, par.cp);
    const double scores = D.b * D.a * D.s * sk;
    const double o = D.T * D.a * d_v, kv = D.T * g_kv * d_v;  // O and V
    auto sm = [&](std::string_view name, Op op, double extra_read) -> Kernel& {
      Kernel& k = add_pointwise(L, name, op, FuseGroup::kSoftmax, scores * D.e + extra_read, scores * D.e, scores);
      k.cls = KernelClass::kSoftmax;
      k.flags |= kAttnCore;
      return k;
    };
    sm("attn_scale", Op::kScale, 0);
    sm("attn_mask", Op::kMask, D.s * sk);
    {
      Kernel& k = sm("attn_softmax", Op::kSoftmax, 0);
      k.flops = 5 * scores;
      k.saved_core_bytes = scores * D.e;  // softmax output: 2 a s^2 b
    }
    if (drop) {
      Kernel& k = add_pointwise(L, "attn_dropout", Op::kAttnDropout, FuseGroup::kNone, scores * D.e,
                                scores * (D.e + 1), 2 * scores);
      k.flags |= kAttnCore;
      k.saved_core_bytes = scores;  // dropout mask: a s^2 b (1 byte)
      k.chain_bytes = scores * D.e;
    }
    Kernel& pv = add_gemm(L, "attn_pv", Op::kPv, D.s, d_v, sk, D.b * D.a, act, false);
    pv.flags |= kAttnCore;
    pv.read_bytes = scores * D.e + kv * D.e;
    pv.write_bytes = o * D.e;
    pv.chain_bytes = pv.write_bytes;
    pv.saved_bytes = kv * D.e;                       // V: 2 sbh
    pv.saved_core_bytes = drop ? scores * D.e : 0;   // dropout output: 2 a s^2 b
    if (causal) pv.model_flops = pv.flops / 2;
  }
  // Output projection: saves its input 2 sbh (/t under TP).
  {
    Kernel& k = add_gemm(L, "attn_out_proj", Op::kOut, D.T, D.h, D.a * d_v, 1, gemm_dt, true);
    k.saved_bytes = D.T * D.a * d_v * D.e;
  }
  auto bias_dropout_add = [&](Op b_op, Op d_op, Op r_op, FuseGroup grp, const char* bn, const char* dn,
                              const char* rn) {
    if (bias) add_pointwise(L, bn, b_op, grp, Tph * D.e + D.h * D.e, Tph * D.e, Tph);
    if (drop) {
      Kernel& k = add_pointwise(L, dn, d_op, grp, Tph * D.e, Tph * (D.e + 1), 2 * Tph);
      k.saved_bytes = Tph;  // dropout mask: sbh (1 byte)
      k.chain_bytes = Tph * D.e;
    }
    add_pointwise(L, rn, r_op, grp, 2 * Tph * D.e, Tph * D.e, Tph);
  };
  bias_dropout_add(Op::kOutBias, Op::kDropout1, Op::kResidual1, FuseGroup::kBiasDropoutAdd1, "attn_out_bias",
                   "attn_out_dropout", "residual_add1");
  norm("norm2", Op::kNorm2, FuseGroup::kNorm2);
  // MLP: the routed experts of an MoE layer (L_mlp of the layers), or the dense MLP of every layer.
  {
    const bool gated = spec::is_gated(M.activation);
    const double experts = M.is_moe() ? M.moe.experts : 1;
    // MoE: this GPU's tokens make T k token-expert pairs; under EP it holds
    // E / ep experts and, on average, as many pairs arrive for them. An
    // expert takes at most capacity_factor x its even share (GShard, Switch:
    // the rest are dropped; 0 = dropless), so `routed` counts the pairs kept.
    const double cf = P.moe.capacity_factor;
    const double kept = M.is_moe() && cf > 0 ? std::min(1.0, cf) : 1.0;
    const double routed = M.is_moe() ? D.T * M.moe.top_k * kept : D.T;  // token-expert pairs
    const double local_experts = M.is_moe() ? experts / std::max(1, par.ep) : 1;
    // The busiest expert sets the expert GEMMs' time: each local expert's
    // GEMM has the busiest one's rows, the even share x imbalance, capped at
    // the capacity; model FLOPs credit the pairs kept.
    const double even = M.is_moe() ? D.T * M.moe.top_k / local_experts : D.T;
    const double imbalance = std::max(1.0, P.moe.imbalance);
    const double busiest = M.is_moe() ? even * (cf > 0 ? std::min(imbalance, cf) : imbalance) : D.T;
    const double n_up = gated ? 2 * D.f : D.f;
    if (M.is_moe()) {
      Kernel& r = add_gemm(L_mlp, "moe_router", Op::kRouter, D.T, experts, D.h, 1, gemm_dt, true);
      r.saved_bytes = 0;
      Kernel& disp = add_pointwise(L_mlp, "moe_dispatch", Op::kDispatch, FuseGroup::kNone, D.T * D.h * D.e,
                                   routed * D.h * D.e, 0);
      disp.cls = KernelClass::kElementwise;
      disp.flags &= ~kPointwise;
      disp.launches = 3;  // top-k, sort/permute indices, gather
    }
    // Up (and gate) projection: saves its input 2 sbh; for MoE each local
    // expert's GEMM sees the busiest expert's tokens (batch = local experts).
    {
      Kernel& k = add_gemm(L_mlp, "mlp_up_proj", Op::kUp, busiest, n_up, D.h, local_experts, gemm_dt, true);
      if (M.is_moe()) k.model_flops = 2.0 * routed * n_up * D.h;
      k.saved_bytes = (M.is_moe() ? routed * D.h : Tph) * D.e;
      if (bias)
        add_pointwise(L_mlp, "mlp_up_bias", Op::kUpBias, FuseGroup::kBiasAct, routed * n_up * D.e + n_up * D.e,
                      routed * n_up * D.e, routed * n_up);
      if (gated) {
        // Eager SwiGLU: silu(gate) saves the gate (f), gate*up saves silu's output and up (2f).
        add_pointwise(L_mlp, "mlp_act", Op::kAct, FuseGroup::kBiasAct, routed * D.f * D.e, routed * D.f * D.e,
                      8 * routed * D.f)
            .saved_bytes = routed * D.f * D.e;
        add_pointwise(L_mlp, "mlp_gate_mul", Op::kGateMul, FuseGroup::kBiasAct, 2 * routed * D.f * D.e,
                      routed * D.f * D.e, routed * D.f)
            .saved_bytes = 2 * routed * D.f * D.e;
      } else {
        // GeLU input: 8 sbh for f = 4h (/t)
        add_pointwise(L_mlp, "mlp_act", Op::kAct, FuseGroup::kBiasAct, routed * D.f * D.e, routed * D.f * D.e,
                      8 * routed * D.f)
            .saved_bytes = routed * D.f * D.e;
        if (M.activation == spec::Activation::kSquaredRelu) add_square(L_mlp, "mlp_act_square", routed * D.f);
      }
    }
    {
      Kernel& k = add_gemm(L_mlp, "mlp_down_proj", Op::kDown, busiest, D.h, D.f, local_experts, gemm_dt, true);
      if (M.is_moe()) k.model_flops = 2.0 * routed * D.h * D.f;
      k.saved_bytes = routed * D.f * D.e;  // down-projection input: 8 sbh for f = 4h (/t)
    }
    if (M.is_moe()) {
      Kernel& c = add_pointwise(L_mlp, "moe_combine", Op::kCombine, FuseGroup::kNone, routed * D.h * D.e,
                                D.T * D.h * D.e, routed * D.h);
      c.flags &= ~kPointwise;
      c.launches = 2;
      c.saved_bytes = D.T * M.moe.top_k * 4;  // routing weights
    }
  }
  // A dense MLP of `width` on all T tokens, split by TP as the dense model's:
  // an MoE layer's shared expert (not routed) and the dense first layers.
  // Saves as the dense model's: the input (2 sbh, SP: /t), the activation's
  // inputs and the down-projection's input.
  struct MlpNames {
    const char *up, *bias, *act, *act_square, *gate_mul, *down;
  };
  auto plain_mlp = [&](const MlpNames& nm, double width, double count, std::uint16_t extra) {
    auto mark = [&](Kernel* k) { k->flags |= extra; };
    const bool gated = spec::is_gated(M.activation);
    const double f = width / t, n_up = gated ? 2 * f : f, T = D.T;
    Kernel& up = add_gemm(count, nm.up, Op::kUp, T, n_up, D.h, 1, gemm_dt, true);
    up.saved_bytes = Tph * D.e;
    mark(&up);
    if (bias)
      add_pointwise(count, nm.bias, Op::kUpBias, FuseGroup::kBiasAct, T * n_up * D.e + n_up * D.e, T * n_up * D.e,
                    T * n_up);
    Kernel& s = add_pointwise(count, nm.act, Op::kAct, FuseGroup::kBiasAct, T * f * D.e, T * f * D.e, 8 * T * f);
    s.saved_bytes = T * f * D.e;
    mark(&s);
    if (M.activation == spec::Activation::kSquaredRelu) mark(&add_square(count, nm.act_square, T * f));
    if (gated) {
      Kernel& m2 =
          add_pointwise(count, nm.gate_mul, Op::kGateMul, FuseGroup::kBiasAct, 2 * T * f * D.e, T * f * D.e, T * f);
      m2.saved_bytes = 2 * T * f * D.e;
      mark(&m2);
    }
    Kernel& down = add_gemm(count, nm.down, Op::kDown, T, D.h, f, 1, gemm_dt, true);
    down.saved_bytes = T * f * D.e;
    mark(&down);
  };
  if (M.is_moe() && M.moe.shared_ffn > 0 && L_mlp > 0) {
    plain_mlp({"shared_up_proj", "shared_up_bias", "shared_act", "shared_act_square", "shared_gate_mul",
               "shared_down_proj"},
              M.moe.shared_ffn, L_mlp, kSharedExpert);
    // The shared expert's output added to the routed experts' combined output.
    add_pointwise(L_mlp, "moe_shared_add", Op::kSharedAdd, FuseGroup::kNone, 2 * D.T * D.h * D.e, D.T * D.h * D.e,
                  D.T * D.h);
  }
  if (L_dense > 0)
    plain_mlp({"dense_up_proj", "dense_up_bias", "dense_act", "dense_act_square", "dense_gate_mul",
               "dense_down_proj"},
              M.moe.dense_ffn, L_dense, 0);
  bias_dropout_add(Op::kDownBias, Op::kDropout2, Op::kResidual2, FuseGroup::kBiasDropoutAdd2, "mlp_down_bias",
                   "mlp_dropout", "residual_add2");

  // ---- head (last pipeline stage) ----
  {
    Kernel* k = norm("final_norm", Op::kFinalNorm, FuseGroup::kFinalNorm);
    k->count = 1;
    k->flags &= ~kLayer;
  }
  {
    Kernel& k = add_gemm(1, "lm_head", Op::kLmHead, D.T, D.V, D.h, 1, gemm_dt, true);
    k.flags &= ~kLayer;
    k.saved_bytes = Tph * D.e;
  }
  {
    // Eager cross-entropy (logits.float(), log_softmax, nll): upcast copy,
    // log_softmax saves its fp32 output for backward.
    const double logits = D.T * D.V;
    Kernel& k = ks.emplace_back(eager_cross_entropy_kernel(logits, D.e));
    k.saved_bytes = logits * 4;
    k.workspace_bytes = logits * 4;  // the fp32 upcast, freed after the loss
  }
  if (mtp > 0) {
    // Each MTP depth k (DeepSeek-V3 Sec. 2.2, Eq. 21-23; README_WEIGHTS.md:
    // enorm, hnorm, eh_proj, shared_head): the shared embedding of the
    // tokens k ahead and the previous depth's output, each RMSNormed,
    // concatenated (2h) and projected to h by M_k (eh_proj, replicated
    // under TP), the block (above, with the layers), the head's norm and the
    // shared output head and loss once more.
    const auto last_of = [&ks](Op op) {
      return *std::find_if(ks.rbegin(), ks.rend(), [op](const Kernel& k) { return k.op == op; });
    };
    // Copies of the main lookup, head and loss (taken before adding, which may move them).
    Kernel emb = ks.front();
    Kernel head = last_of(Op::kLmHead);
    Kernel loss = last_of(Op::kLoss);
    emb.name = "mtp_embedding";
    emb.saved_bytes = 0;  // the same token ids, shifted: saved once by the main lookup
    emb.count = head.count = loss.count = mtp;
    ks.push_back(emb);
    Kernel* n = norm("mtp_norm", Op::kFinalNorm, FuseGroup::kNone);
    n->count = 3.0 * mtp;  // enorm, hnorm, the shared head's norm
    n->flags &= ~kLayer;
    Kernel& k = add_gemm(mtp, "mtp_eh_proj", Op::kOther, D.T, D.h, 2 * D.h, 1, gemm_dt, true);
    k.flags &= ~kLayer;
    k.saved_bytes = 2 * Tph * D.e;  // the concatenated input
    head.name = "mtp_lm_head";
    loss.name = "mtp_cross_entropy";
    ks.push_back(head);
    ks.push_back(loss);
  }
}

}  // namespace ridgeline::graph
