/* shardvit eval: load timm-named safetensors weights into FSDP master shards (eval, predict,
 * fine-tuning start points), and read the model shape such a file implies.
 *
 * Shape inference (sv_weights_infer_config) reads, in this order, each later source overriding
 * the earlier ones for the fields it knows:
 *   1. the caller's starting config (normally a preset);
 *   2. config.json next to the weights file when present, timm style: top-level or "model_args"
 *      keys embed_dim, depth, num_heads, patch_size, img_size (number or [h, w]), num_classes,
 *      in_chans, mlp_ratio;
 *   3. the tensor shapes in the file, which are authoritative for everything but the number of
 *      heads: patch_embed.proj.weight (D, C, p, p), pos_embed (1, T, D) with T = 1 + (img/p)^2,
 *      head.weight (K, D), blocks.<l>.* (depth), blocks.0.mlp.fc1.weight (Hd, D).
 * The head count is not visible in any shape; it comes from config.json or the caller.
 * config.json must agree with the tensors: every architecture key it states (top level or
 * model_args; see check_config_json) that contradicts them is SV_ERR_FORMAT naming the key.
 *
 * Loading (sv_weights_load) checks every model tensor is present with exactly the model's shape
 * and that the file has no tensor the model lacks (a different architecture); a pos_embed of
 * another patch grid (eval --img N at another resolution) and a patch_embed.proj.weight of
 * another patch size (--patch) are resampled as timm does when it loads weights into a model of
 * another img_size / patch_size (ckpt/ckpt_adapt.h; every rank resamples the whole tensor, then
 * keeps its part). Then each rank
 * reads only the pieces of each tensor that fall into its own shard (sv_layout_piece), converting
 * F32/BF16/F16 to fp32, and uploads its master shards. Optimizer state is zeroed. A NaN or Inf
 * among the values a rank reads is an error naming the tensor and its first non-finite element
 * (ckpt/checkpoint.h sv_ckpt_check_finite). */
#ifndef SV_EVAL_WEIGHTS_H
#define SV_EVAL_WEIGHTS_H

#include "core/status.h"
#include "fsdp/fsdp.h"
#include "model/config.h"

/* cfg: in/out (see above). *have_heads (nullable): 1 when config.json gave num_heads.
 * Missing or unreadable file, missing patch_embed/pos_embed/head tensors, or an inconsistent
 * pos_embed length => error naming the file and tensor. */
sv_status sv_weights_infer_config(const char *path, sv_vit_config *cfg, int *have_heads);

/* Collective over the FSDP shard group only in the sense that every rank reads its own part;
 * no communication. The FSDP state must be carved (sv_run_setup done). */
sv_status sv_weights_load(sv_fsdp *f, const char *path);

#endif
