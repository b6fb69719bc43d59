use super::*;
use crate::engine::error::Error;
use std::path::Path;

#[test]
fn parameter_counts_match_the_published_sizes() {
    // (model, total params as published, active params incl. embeddings)
    let cases = [
        ("llama-3.1-8b", 8.03e9, 8.03e9),
        ("llama-3.1-70b", 70.55e9, 70.55e9),
        ("llama-3.1-405b", 405.85e9, 405.85e9),
        ("qwen2.5-7b", 7.62e9, 7.62e9),
        ("qwen2.5-72b", 72.7e9, 72.7e9),
        ("mixtral-8x7b", 46.70e9, 12.88e9),
        ("qwen3-8b", 8.2e9, 8.2e9),
        ("qwen3-14b", 14.8e9, 14.8e9),
        ("qwen3-32b", 32.8e9, 32.8e9),
    ];
    for (name, total, active) in cases {
        let m = ModelSpec::lookup(name).unwrap();
        let t = m.total_params() as f64;
        let a = (m.active_params() + m.embedding_params()) as f64;
        assert!((t / total - 1.0).abs() < 0.01, "{name}: total {t:e} vs {total:e}");
        assert!((a / active - 1.0).abs() < 0.01, "{name}: active {a:e} vs {active:e}");
    }
    // Exact for the 8B, counted by hand: 32 × (41,943,040 + 176,160,768)
    // + 2 × 128,256 × 4,096.
    let m = ModelSpec::lookup("llama-3.1-8b").unwrap();
    assert_eq!(m.body_params(), 6_979_321_856);
    assert_eq!(m.total_params(), 8_029_995_008);
}

#[test]
fn qwen3_moe_sizes_match_their_model_cards() {
    // Total and activated parameters as the model cards round them (30.5 B /
    // 3.3 B, 235 B / 22 B), non-embedding totals 29.9 B and 234 B.
    for (name, total, active, body) in
        [("qwen3-30b-a3b", 30.5e9, 3.3e9, 29.9e9), ("Qwen/Qwen3-235B-A22B", 235e9, 22e9, 234e9)]
    {
        let m = ModelSpec::lookup(name).unwrap();
        let (t, a, b) =
            (m.total_params() as f64, (m.active_params() + m.embedding_params()) as f64, m.body_params() as f64);
        assert!((t / total - 1.0).abs() < 0.01, "{name}: total {t:e} vs {total:e}");
        assert!((a / active - 1.0).abs() < 0.03, "{name}: active {a:e} vs {active:e}");
        assert!((b / body - 1.0).abs() < 0.01, "{name}: non-embedding {b:e} vs {body:e}");
        assert_eq!(m.moe, Some(Moe { num_experts: 128, experts_per_token: 8 }));
    }
}

#[test]
fn model_aliases_resolve_case_insensitively() {
    for (alias, name) in [
        ("llama-3.1-8b", "Llama-3.1-8B"),
        ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
        ("LLAMA-3.3-70B", "Llama-3.3-70B"),
        ("llama-3-70b", "Llama-3-70B"),
        ("meta-llama/Llama-3.3-70B-Instruct", "Llama-3.3-70B"),
        ("deepseek-ai/DeepSeek-R1", "DeepSeek-R1"),
        ("deepseek-r1-0528", "DeepSeek-R1-0528"),
        ("nvidia/Llama-3.1-8B-Instruct-FP8", "Llama-3.1-8B"),
        ("Qwen/Qwen2.5-72B-Instruct", "Qwen2.5-72B"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B"),
    ] {
        assert_eq!(ModelSpec::lookup(alias).unwrap().name, name, "{alias}");
    }
    // A release shares its architecture's shape, and Llama 3 its own
    // context; its shown name looks it up again.
    let [v31, v33, v3] = ["llama-3.1-70b", "llama-3.3-70b", "llama-3-70b"].map(|m| ModelSpec::lookup(m).unwrap());
    assert_eq!((v33.num_layers, v33.hidden_size, v33.max_context), (v31.num_layers, v31.hidden_size, 131_072));
    assert_eq!((v3.num_layers, v3.max_context), (80, 8192));
    for alias in ["llama-3.3-70b", "llama3-8b", "deepseek-v3-0324"] {
        let shown = ModelSpec::lookup(alias).unwrap().name;
        assert_eq!(ModelSpec::lookup(&shown).unwrap().name, shown, "{alias}");
    }
    let err = ModelSpec::lookup("gpt-5").unwrap_err().to_string();
    assert!(err.contains("llama-3.1-8b") && err.contains("config.json"), "{err}");
}

#[test]
fn gpu_aliases_and_datasheets() {
    for (alias, name) in [
        ("h100", "H100 SXM"),
        ("H100-SXM", "H100 SXM"),
        ("h100-pcie", "H100 PCIe"),
        ("h200", "H200"),
        ("a100", "A100 80GB"),
        ("a100-80gb", "A100 80GB"),
        ("l40s", "L40S"),
        ("l4", "L4"),
        ("b200", "B200"),
        ("MI300X", "MI300X"),
        ("nvidia_h100_sxm", "H100 SXM"),
    ] {
        assert_eq!(GpuSpec::lookup(alias).unwrap().name, name, "{alias}");
    }
    let h100 = GpuSpec::lookup("h100").unwrap();
    assert_eq!((h100.memory_gib, h100.bandwidth_tb_s), (79.18, 3.35));
    assert_eq!((h100.bf16_tflops, h100.fp8_tflops), (989.0, Some(1979.0)));
    let err = GpuSpec::lookup("tpu-v5").unwrap_err().to_string();
    assert!(err.contains("h100-sxm") && err.contains("mi300x"), "{err}");
}

#[test]
fn every_spelling_of_a_gpu_has_the_catalogs_one_id() {
    for (given, id) in [
        ("H100", "h100-sxm"),
        ("h100", "h100-sxm"),
        ("nvidia_H100_SXM5", "h100-sxm"),
        ("H200", "h200"),
        ("A100", "a100-80gb"),
        (" Mi300x ", "mi300x"),
    ] {
        assert_eq!(GpuSpec::canonical_id(given).unwrap(), id, "{given}");
        // The id names the same GPU.
        assert_eq!(GpuSpec::lookup(id).unwrap(), GpuSpec::lookup(given).unwrap(), "{given}");
    }
    let err = GpuSpec::canonical_id("H999").unwrap_err().to_string();
    assert!(err.contains("H999") && err.contains("h100-sxm, h100-pcie, h200"), "{err}");
}

#[test]
fn fp8_on_a100_is_an_error_that_names_the_fix() {
    let a100 = GpuSpec::lookup("a100").unwrap();
    let err = a100.peak_flops(Precision::Fp8).unwrap_err();
    assert!(matches!(err, Error::PrecisionUnsupported { .. }));
    assert!(err.to_string().contains("bf16"), "{err}");
    assert_eq!(a100.peak_flops(Precision::Int4).unwrap(), 312e12);
}

#[test]
fn precision_bytes_and_parsing() {
    assert_eq!(Precision::Int4.bytes_per_weight(), 0.515625);
    assert_eq!("BF16".parse::<Precision>().unwrap(), Precision::Bf16);
    assert_eq!("fp16".parse::<Precision>().unwrap(), Precision::Bf16);
    assert!("fp3".parse::<Precision>().is_err());
    // INT4 body, 16-bit embeddings: 6.98e9 × 0.515625 + 1.05e9 × 2 bytes.
    let m = ModelSpec::lookup("llama-3.1-8b").unwrap();
    let w = m.weight_bytes(Precision::Int4);
    assert_eq!(w, 6_979_321_856.0 * 0.515625 + 1_050_673_152.0 * 2.0);
}

#[test]
fn hf_config_reads_dense_and_moe_models() {
    let qwen = r#"{"_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "hidden_size": 3584,
        "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
        "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false,
        "max_position_embeddings": 32768}"#;
    let m = ModelSpec::from_hf_config_str(qwen, "x").unwrap();
    let shipped = ModelSpec::lookup("qwen2.5-7b").unwrap();
    assert_eq!(m.total_params(), shipped.total_params());
    assert_eq!(m.head_dim, 128);
    assert_eq!(m.name, "Qwen/Qwen2.5-7B-Instruct");

    let mixtral = r#"{"hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
        "head_dim": null}"#;
    let m = ModelSpec::from_hf_config_str(mixtral, "mixtral").unwrap();
    assert_eq!(m.moe, ModelSpec::lookup("mixtral-8x7b").unwrap().moe);
    assert_eq!(m.active_params(), ModelSpec::lookup("mixtral-8x7b").unwrap().active_params());

    let tied = r#"{"hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
        "num_hidden_layers": 16, "num_key_value_heads": 8, "vocab_size": 128256,
        "tie_word_embeddings": true, "head_dim": 64}"#;
    let m = ModelSpec::from_hf_config_str(tied, "llama-1b").unwrap();
    assert_eq!(m.embedding_params(), 128256 * 2048);
    assert_eq!(m.head_dim, 64);
}

#[test]
fn hf_config_errors_name_the_field() {
    let err = ModelSpec::from_hf_config_str(r#"{"hidden_size": 4096}"#, "m").unwrap_err();
    assert!(err.to_string().contains("num_hidden_layers"), "{err}");
    let err = ModelSpec::from_hf_config_str("[1]", "m").unwrap_err();
    assert!(err.to_string().contains("object"), "{err}");
    // Sizes no model has: the parameter count had wrapped, and it "fit".
    let huge = r#"{"num_hidden_layers":1,"hidden_size":2147483648,"num_attention_heads":2147483648,
        "num_key_value_heads":1,"head_dim":2,"intermediate_size":1,"vocab_size":1}"#;
    let err = ModelSpec::from_hf_config_str(huge, "m").unwrap_err().to_string();
    assert!(err.contains("parameters, past any model") && err.contains("hidden_size"), "{err}");
    let err = ModelSpec::from_hf_config(Path::new("/nonexistent/config.json")).unwrap_err();
    assert!(matches!(err, Error::ModelConfigRead { .. }));

    let dir = std::env::temp_dir().join(format!("goodput-sim-hf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    std::fs::write(&path, r#"{"num_hidden_layers": 2, "hidden_size": -1}"#).unwrap();
    let err = ModelSpec::from_hf_config(&path).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).ok();
    assert!(err.contains("hidden_size") && err.contains("config.json"), "{err}");
}

#[test]
fn kv_bytes_per_token() {
    let m = ModelSpec::lookup("llama-3.1-8b").unwrap();
    // 2 × 32 layers × 8 heads × 128 × 2 bytes = 128 KiB.
    assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 1), 131072.0);
    assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Fp8, 2), 32768.0);
    // Past TP = 8 KV heads each GPU holds a replica of one head.
    assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 16), 16384.0);
}

#[test]
fn fp4_parses_and_runs_only_where_the_tensor_cores_have_it() {
    for name in ["fp4", "NVFP4", "float4"] {
        assert_eq!(name.parse::<Precision>().unwrap(), Precision::Fp4, "{name}");
    }
    assert_eq!(Precision::Fp4.bytes_per_weight(), 0.5625);
    let b200 = GpuSpec::lookup("b200").unwrap();
    assert_eq!(b200.peak_flops(Precision::Fp4).unwrap(), 9000e12);
    assert_eq!(GpuSpec::lookup("gb200").unwrap().peak_flops(Precision::Fp4).unwrap(), 10_000e12);
    assert_eq!(GpuSpec::lookup("GB300-NVL72").unwrap().peak_flops(Precision::Fp4).unwrap(), 15_000e12);
    // AMD's CDNA4 has MXFP4 matrix cores; its CDNA3 parts have none.
    assert_eq!(GpuSpec::lookup("amd-instinct-mi355x").unwrap().peak_flops(Precision::Fp4).unwrap(), 10_066e12);
    for gpu in ["h100", "h200", "a100", "mi300x", "mi325x"] {
        let err = GpuSpec::lookup(gpu).unwrap().peak_flops(Precision::Fp4).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::PrecisionUnsupported { .. }));
        // AMD's are matrix cores.
        let cores = if gpu.starts_with("mi") { "no FP4 matrix cores" } else { "no FP4 tensor cores" };
        assert!(text.contains(cores) && text.contains("(b200, gb200, b300, gb300, mi355x, rtx-pro-6000)"), "{text}");
    }
    // The fix offered runs on the GPU: FP8 on Hopper, not on Ampere.
    let a100 = GpuSpec::lookup("a100").unwrap().peak_flops(Precision::Fp4).unwrap_err().to_string();
    assert!(a100.contains("use int4, int8 or bf16"), "{a100}");
    let h100 = GpuSpec::lookup("h100").unwrap().peak_flops(Precision::Fp4).unwrap_err().to_string();
    assert!(h100.contains("use fp8"), "{h100}");
}

#[test]
fn hopper_and_blackwell_datasheets_and_power() {
    // (alias, GiB as CUDA or HIP reports it (GB300: its datasheet), TB/s,
    // BF16, FP8, FP4 dense TFLOPS, NVLink GB/s per direction, TDP W)
    let cases = [
        ("h200", 139.81, 4.8, 989.0, Some(1979.0), None, 450.0, 700.0),
        ("b200", 178.35, 8.0, 2250.0, Some(4500.0), Some(9000.0), 900.0, 1000.0),
        ("gb200", 184.31, 8.0, 2500.0, Some(5000.0), Some(10_000.0), 900.0, 1200.0),
        ("b300", 267.69, 8.0, 2250.0, Some(4500.0), Some(13_500.0), 900.0, 1100.0),
        ("gb300", 279.0, 8.0, 2500.0, Some(5000.0), Some(15_000.0), 900.0, 1400.0),
        ("mi325x", 255.98, 6.0, 1307.0, Some(2615.0), None, 448.0, 1000.0),
        ("mi355x", 287.98, 8.0, 2517.0, Some(5033.0), Some(10_066.0), 537.6, 1400.0),
        // The data sheet's FP4 with sparsity halved; FP8 and BF16 halved
        // from it again (derived: the family is uncalibrated), PCIe Gen5.
        ("rtx-pro-6000", 94.97, 1.792, 500.0, Some(1000.0), Some(2000.0), 64.0, 600.0),
    ];
    for (alias, mem, bw, bf16, fp8, fp4, link, tdp) in cases {
        let g = GpuSpec::lookup(alias).unwrap();
        assert_eq!((g.memory_gib, g.bandwidth_tb_s, g.bf16_tflops), (mem, bw, bf16), "{alias}");
        assert_eq!((g.fp8_tflops, g.fp4_tflops), (fp8, fp4), "{alias}");
        assert_eq!((g.interconnect_gb_s, g.tdp_w), (link, tdp), "{alias}");
    }
    // Every part has a TDP and an idle floor well below it.
    for g in GpuSpec::catalog() {
        assert!(g.tdp_w > 0.0 && g.idle_w > 0.05 * g.tdp_w && g.idle_w < 0.3 * g.tdp_w, "{}", g.name);
    }
}

/// DeepSeek-V3's config.json as deepseek-ai/DeepSeek-V3 ships it (the
/// fields the model reads and some it leaves, rope scaling and the FP8
/// quantisation among them).
const DEEPSEEK_V3_CONFIG: &str = r#"{
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
  "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
  "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
  "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_group": 8, "topk_group": 4,
  "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "v_head_dim": 128, "num_nextn_predict_layers": 1, "vocab_size": 129280,
  "max_position_embeddings": 163840, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
    "weight_block_size": [128, 128]}
}"#;

#[test]
fn deepseek_v3_sizes_match_its_model_card() {
    let m = ModelSpec::lookup("deepseek-v3").unwrap();
    // Counted by hand. Attention a layer: q 7,168 × 1,536 + 1,536 × 128 × 192;
    // kv 7,168 × 576 + 512 × 128 × 256; o 128 × 128 × 7,168: 187,105,280.
    assert_eq!(m.attention_params_per_layer(), 187_105_280);
    // 3 dense MLPs of 3 × 7,168 × 18,432; 58 MoE layers of 256 + 1 shared
    // experts of 3 × 7,168 × 2,048 and a 7,168 × 256 router.
    assert_eq!((m.moe_layers(), m.dense_mlp_layers), (58, 3));
    assert_eq!(m.mlp_params_per_layer(), 257 * 44_040_192 + 7168 * 256);
    assert_eq!(m.total_params(), 671_025_397_760);
    // 671 B in all, 37 B activated, as DeepSeek gives them; active counted
    // with the embeddings, as the other models' checks count it (37.55 B).
    let (t, a) = (m.total_params() as f64, (m.active_params() + m.embedding_params()) as f64);
    assert!((t / 671e9 - 1.0).abs() < 0.01, "total {t:e}");
    assert!((a / 37e9 - 1.0).abs() < 0.03, "active {a:e}");
    assert_eq!(m.active_params(), 61 * 187_105_280 + 3 * 396_361_728 + 58 * (9 * 44_040_192 + 7168 * 256));
    // The KV cache holds the latent and the rotary key, 576 elements a layer,
    // on every TP rank: 61 × 576 × 2 bytes, not 2 × 61 × 128 heads × 56.
    assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 1), 70_272.0);
    assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 8), 70_272.0);
    assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Fp8, 8), 35_136.0);
    // Absorbed attention: scores over 576 and a sum of 512-wide latents.
    assert_eq!(m.attention_flops_per_pair(), 61.0 * 128.0 * (2.0 * 576.0 + 2.0 * 512.0));
    // Each release of the architecture is shown by its own name.
    for (alias, shown) in [
        ("deepseek-ai/DeepSeek-V3", "DeepSeek-V3"),
        ("deepseek-ai/DeepSeek-V3-Base", "DeepSeek-V3"),
        ("deepseek-ai/DeepSeek-V3-0324", "DeepSeek-V3-0324"),
        ("deepseek-ai/DeepSeek-R1", "DeepSeek-R1"),
        ("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-R1-0528"),
        ("DEEPSEEK_R1", "DeepSeek-R1"),
    ] {
        let release = ModelSpec::lookup(alias).unwrap();
        assert_eq!(release.name, shown, "{alias}");
        assert_eq!((release.num_layers, release.moe, release.max_context), (m.num_layers, m.moe, m.max_context));
    }
}

#[test]
fn hf_config_reads_deepseek_v3_as_the_catalog_has_it() {
    let read = ModelSpec::from_hf_config_str(DEEPSEEK_V3_CONFIG, "DeepSeek-V3").unwrap();
    let shipped = ModelSpec::lookup("deepseek-v3").unwrap();
    assert_eq!(read, shipped);
    // What it had read: a 38 B dense model whose KV cache was 25 times MLA's.
    assert!(read.moe.is_some() && read.mla.is_some());
    let as_gqa = 2.0 * 61.0 * 128.0 * 56.0 * 2.0;
    assert!(as_gqa / read.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 1) > 24.0);
    // A serialised form from before these fields reads as it did, and a
    // dense model serialises as it did.
    let llama = ModelSpec::lookup("llama-3.1-8b").unwrap();
    let text = serde_json::to_string(&llama).unwrap();
    for key in ["mla", "shared_expert", "dense_"] {
        assert!(!text.contains(key), "{text}");
    }
    assert_eq!(serde_json::from_str::<ModelSpec>(&text).unwrap(), llama);
    let text = serde_json::to_string(&shipped).unwrap();
    assert_eq!(serde_json::from_str::<ModelSpec>(&text).unwrap(), shipped);
}

#[test]
fn hf_config_reads_deepseek_v2_lite_with_full_rank_queries() {
    // deepseek-ai/DeepSeek-V2-Lite: no query compression (`q_lora_rank`
    // null), one dense layer, 64 routed experts, top-6, 2 shared. 15.7 B
    // parameters, 2.4 B activated as DeepSeek counts them: with the LM head,
    // without the input embedding (a lookup, no matrix product).
    let lite = r#"{"hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
        "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
        "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
        "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": null,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
        "max_position_embeddings": 163840, "tie_word_embeddings": false}"#;
    let m = ModelSpec::from_hf_config_str(lite, "DeepSeek-V2-Lite").unwrap();
    assert_eq!(m.attention_params_per_layer(), 2048 * 16 * 192 + 2048 * 576 + 512 * 16 * 256 + 16 * 128 * 2048);
    assert_eq!((m.moe_layers(), m.dense_mlp_layers, m.shared_expert_intermediate_size), (26, 1, 2816));
    let t = m.total_params() as f64;
    let a = (m.active_params() + m.embedding_params() / 2) as f64;
    assert!((t / 15.7e9 - 1.0).abs() < 0.01, "total {t:e}");
    assert!((a / 2.4e9 - 1.0).abs() < 0.03, "active {a:e}");
}

#[test]
fn qwen_moe_shared_experts_are_counted() {
    // Qwen/Qwen1.5-MoE-A2.7B: 14.3 B parameters, 2.7 B activated; and
    // Qwen/Qwen2-57B-A14B: 57 B and 14 B (the model cards'; active counted
    // with the embeddings, as Qwen counts it). Each MoE layer has a shared
    // expert of `shared_expert_intermediate_size`, always active.
    let a27 = r#"{"_name_or_path": "Qwen/Qwen1.5-MoE-A2.7B", "hidden_size": 2048,
        "intermediate_size": 5632, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
        "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936,
        "max_position_embeddings": 8192, "tie_word_embeddings": false}"#;
    let a14 = r#"{"_name_or_path": "Qwen/Qwen2-57B-A14B", "hidden_size": 3584,
        "intermediate_size": 18944, "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480,
        "num_experts": 64, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
        "vocab_size": 151936, "max_position_embeddings": 131072, "tie_word_embeddings": false}"#;
    for (text, total, active) in [(a27, 14.3e9, 2.7e9), (a14, 57.4e9, 14e9)] {
        let m = ModelSpec::from_hf_config_str(text, "x").unwrap();
        let (t, a) = (m.total_params() as f64, (m.active_params() + m.embedding_params()) as f64);
        assert!((t / total - 1.0).abs() < 0.01, "{}: total {t:e} vs {total:e}", m.name);
        assert!((a / active - 1.0).abs() < 0.03, "{}: active {a:e} vs {active:e}", m.name);
        assert_eq!(m.dense_mlp_layers, 0);
    }
    // Without its shared expert the 2.7 B model would be 13.5 B and 1.9 B.
    let m = ModelSpec::from_hf_config_str(a27, "x").unwrap();
    assert_eq!(m.shared_expert_params_per_layer(), 3 * 2048 * 5632);
    assert_eq!(m.total_params(), 14_315_487_232);
    assert_eq!(m.active_params(), 24 * (4 * 2048 * 2048 + 4 * 3 * 2048 * 1408 + 2048 * 60 + 3 * 2048 * 5632));
}

#[test]
fn hf_config_reads_which_layers_are_dense() {
    let base = |extra: &str| {
        format!(
            r#"{{"hidden_size": 1024, "intermediate_size": 4096, "moe_intermediate_size": 512,
            "num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 8,
            "num_experts": 16, "num_experts_per_tok": 2, "vocab_size": 32000{extra}}}"#
        )
    };
    let read = |extra: &str| ModelSpec::from_hf_config_str(&base(extra), "m");
    let layers = |extra: &str| {
        let m = read(extra).unwrap();
        (m.moe_layers(), m.dense_mlp_layers)
    };
    assert_eq!(layers(""), (12, 0));
    // DeepSeek's rule: i ≥ first_k_dense_replace and i % moe_layer_freq = 0.
    assert_eq!(layers(r#", "first_k_dense_replace": 0"#), (12, 0));
    assert_eq!(layers(r#", "first_k_dense_replace": 3"#), (9, 3));
    assert_eq!(layers(r#", "moe_layer_freq": 2"#), (6, 6));
    assert_eq!(layers(r#", "first_k_dense_replace": 1, "moe_layer_freq": 2"#), (5, 7));
    // Qwen-MoE's: (i + 1) % decoder_sparse_step = 0, i not in mlp_only_layers.
    assert_eq!(layers(r#", "decoder_sparse_step": 3"#), (4, 8));
    assert_eq!(layers(r#", "mlp_only_layers": [0, 11, 40]"#), (10, 2));
    // Where they stand: the first k are said by their number alone, the
    // others by their indices, and a stage counts its own.
    let at = |extra: &str| read(extra).unwrap().dense_mlp_at;
    assert_eq!(at(r#", "first_k_dense_replace": 3"#), Vec::<u32>::new());
    assert_eq!(at(r#", "mlp_only_layers": [1, 0]"#), Vec::<u32>::new());
    assert_eq!(at(r#", "moe_layer_freq": 2"#), vec![1, 3, 5, 7, 9, 11]);
    assert_eq!(at(r#", "decoder_sparse_step": 3"#), vec![0, 1, 3, 4, 6, 7, 9, 10]);
    assert_eq!(at(r#", "mlp_only_layers": [0, 11, 40]"#), vec![0, 11]);
    let m = read(r#", "first_k_dense_replace": 3"#).unwrap();
    assert_eq!([0..2, 2..6, 6..12, 0..12].map(|r| m.dense_mlp_layers_in(r)), [2, 1, 0, 3]);
    let m = read(r#", "moe_layer_freq": 2"#).unwrap();
    assert_eq!([0..2, 2..6, 6..12, 0..12, 11..12].map(|r| m.dense_mlp_layers_in(r)), [1, 2, 3, 6, 1]);
    assert_eq!(read("").unwrap().dense_mlp_layers_in(0..12), 0);
    // Dense layers are MLPs of intermediate_size: 2 of them here.
    let m = read(r#", "mlp_only_layers": [0, 11]"#).unwrap();
    let all_moe = read("").unwrap();
    let dense_mlp = 3 * 1024 * 4096;
    assert_eq!(m.body_params() + 2 * all_moe.mlp_params_per_layer(), all_moe.body_params() + 2 * dense_mlp);
    assert_eq!(m.active_params() + 2 * (2 * 3 * 1024 * 512 + 1024 * 16), all_moe.active_params() + 2 * dense_mlp);
    // Every layer dense: a dense model.
    let m = read(r#", "first_k_dense_replace": 12"#).unwrap();
    assert_eq!((m.moe, m.intermediate_size, m.dense_mlp_layers), (None, 4096, 0));
    // Refusals name the field.
    for (extra, says) in [
        (r#", "moe_layer_freq": 0"#, "`moe_layer_freq` must be a positive integer"),
        (r#", "mlp_only_layers": "none""#, "`mlp_only_layers` must be a list of layer indices"),
        (r#", "first_k_dense_replace": -1"#, "`first_k_dense_replace` must be a non-negative integer"),
        (r#", "n_shared_experts": 1.5"#, "`n_shared_experts` must be a non-negative integer"),
    ] {
        let err = read(extra).unwrap_err().to_string();
        assert!(err.contains(says), "{extra}: {err}");
    }
    let no_dense_size = base(r#", "first_k_dense_replace": 1"#).replace(r#""intermediate_size": 4096,"#, "");
    let err = ModelSpec::from_hf_config_str(&no_dense_size, "m").unwrap_err().to_string();
    assert!(err.contains("`intermediate_size` is missing: 1 of the 12 layers are dense"), "{err}");
    let err = ModelSpec::from_hf_config_str(&base(r#", "kv_lora_rank": 512, "qk_nope_head_dim": 128"#), "m")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`qk_rope_head_dim` is missing: multi-head latent attention"), "{err}");
}

#[test]
fn a_deepseek_config_that_contradicts_itself_is_refused_by_its_fields() {
    // Each had been read in silence: a `num_experts` of 0 beside
    // `n_routed_experts` made DeepSeek-V3 dense, and a `kv_lora_rank` of
    // null made its attention grouped-query of heads 56 wide.
    let with = |extra: &str| DEEPSEEK_V3_CONFIG.replacen('{', &format!("{{{extra},"), 1);
    let refused = |extra: &str| ModelSpec::from_hf_config_str(&with(extra), "ds").unwrap_err().to_string();
    let e = refused(r#""num_experts": 0"#);
    assert!(e.contains("`num_experts` is 0 but `n_routed_experts` is 256"), "{e}");
    let e = refused(r#""num_local_experts": 8"#);
    assert!(e.contains("`num_local_experts` is 8 but `n_routed_experts` is 256"), "{e}");
    // The same count under two names is one count.
    let same = ModelSpec::from_hf_config_str(&with(r#""num_experts": 256"#), "ds").unwrap();
    assert_eq!(same.moe, ModelSpec::lookup("deepseek-v3").unwrap().moe);
    let nulled = DEEPSEEK_V3_CONFIG.replace(r#""kv_lora_rank": 512"#, r#""kv_lora_rank": null"#);
    assert_ne!(nulled, DEEPSEEK_V3_CONFIG);
    let e = ModelSpec::from_hf_config_str(&nulled, "ds").unwrap_err().to_string();
    assert!(e.contains("`qk_nope_head_dim` is given but `kv_lora_rank` is not"), "{e}");
}

#[test]
fn a_long_mlp_only_layers_is_read_at_once_and_shown_short() {
    // A million entries: a set, not a list searched once a layer (a
    // 16.7 MB config had taken 37 s), and a bad one named by its place,
    // not by the whole list (a 6.9 MB message).
    let many: Vec<String> = (0..1_000_000).map(|i| (i % 61).to_string()).collect();
    let config = |list: &str| DEEPSEEK_V3_CONFIG.replacen('{', &format!("{{\"mlp_only_layers\": [{list}],"), 1);
    let started = std::time::Instant::now();
    let m = ModelSpec::from_hf_config_str(&config(&many.join(",")), "ds").unwrap();
    // Every layer listed: no layer keeps its experts, a dense model.
    assert!(m.moe.is_none(), "{m:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    let e = ModelSpec::from_hf_config_str(&config(&format!("{},-1", many.join(","))), "ds").unwrap_err().to_string();
    assert!(e.contains("its element 1000000 is -1"), "{e}");
    assert!(e.len() < 1_000, "{} characters", e.len());
    let e = ModelSpec::from_hf_config_str(&config("0").replace("[0]", &format!("\"{}\"", "x".repeat(500))), "ds")
        .unwrap_err()
        .to_string();
    assert!(e.contains("… (502 characters)") && e.len() < 1_000, "{e}");
}

#[test]
fn a_checkpoint_s_width_is_read_from_its_quantization_config() {
    let base = r#""num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512,
        "vocab_size": 1000"#;
    let read = |q: &str| {
        let text =
            if q.is_empty() { format!("{{{base}}}") } else { format!("{{{base}, \"quantization_config\": {q}}}") };
        ModelSpec::from_hf_config_str(&text, "m").unwrap().checkpoint_precision
    };
    let cases = [
        ("", None),
        (r#"{"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}"#, Some(Precision::Fp8)),
        (r#"{"quant_method": "fbgemm_fp8"}"#, Some(Precision::Fp8)),
        (r#"{"quant_method": "awq", "bits": 4, "group_size": 128}"#, Some(Precision::Int4)),
        (r#"{"quant_method": "gptq", "bits": 8}"#, Some(Precision::Int8)),
        (r#"{"quant_method": "gptq", "bits": 3}"#, None),
        (r#"{"quant_method": "modelopt", "quant_algo": "NVFP4"}"#, Some(Precision::Fp4)),
        (r#"{"quant_method": "modelopt", "quant_algo": "FP8"}"#, Some(Precision::Fp8)),
        (
            r#"{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
                {"num_bits": 8, "type": "float"}}}}"#,
            Some(Precision::Fp8),
        ),
        (
            r#"{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
                {"num_bits": 4, "type": "int"}}}}"#,
            Some(Precision::Int4),
        ),
        // Bits written as a string, and compressed-tensors' groups that agree.
        (r#"{"quant_method": "gptq", "bits": "4"}"#, Some(Precision::Int4)),
        (
            r#"{"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
                {"num_bits": 8, "type": "float"}}, "group_1": {"weights": {"num_bits": 8, "type": "float"}}}}"#,
            Some(Precision::Fp8),
        ),
        // GPT-OSS's experts.
        (
            r#"{"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}"#,
            Some(Precision::Mxfp4),
        ),
        // Not modelled: left to --precision.
        (r#"{"quant_method": "bitsandbytes", "load_in_4bit": true}"#, None),
        (r#"{"quant_method": 7}"#, None),
        (r#""fp8""#, None),
    ];
    for (q, want) in cases {
        assert_eq!(read(q), want, "{q}");
    }
    // DeepSeek-V3 is published in FP8; the Llamas in 16 bits.
    assert_eq!(ModelSpec::lookup("deepseek-r1").unwrap().checkpoint_precision, Some(Precision::Fp8));
    assert_eq!(ModelSpec::lookup("llama-3.1-8b").unwrap().checkpoint_precision, None);
}

#[test]
fn an_unmodelled_quantization_is_named_for_the_note() {
    let base = r#""num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512,
        "vocab_size": 1000"#;
    let named = |q: &str| {
        ModelSpec::from_hf_config_str(&format!("{{{base}, \"quantization_config\": {q}}}"), "m")
            .unwrap()
            .unmodelled_quantization
    };
    assert_eq!(named(r#"{"quant_method": "bitsandbytes", "load_in_4bit": true}"#).as_deref(), Some("\"bitsandbytes\""));
    assert_eq!(named(r#"{"quant_method": "gptq", "bits": 3}"#).as_deref(), Some("\"gptq\" (3 bits)"));
    let mixed = r#"{"quant_method": "compressed-tensors", "config_groups": {"a": {"weights": {"num_bits": 8,
        "type": "float"}}, "b": {"weights": {"num_bits": 4, "type": "int"}}}}"#;
    assert_eq!(named(mixed).as_deref(), Some("\"compressed-tensors\""));
    // Modelled, or none at all: nothing to say.
    assert_eq!(named(r#"{"quant_method": "awq", "bits": 4}"#), None);
    assert_eq!(named("null"), None);
}

#[test]
fn a_multimodal_config_takes_what_its_text_config_lacks_from_the_top_level() {
    let sizes = r#""num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336"#;
    let read = |text: &str| ModelSpec::from_hf_config_str(text, "mm");
    // Qwen-VL's and Llama 4's quantized checkpoints keep quantization_config
    // at the top: it had been ignored, and the model ran in 16 bits.
    let awq = format!(
        r#"{{"quantization_config": {{"quant_method": "awq", "bits": 4}},
            "text_config": {{{sizes}, "vocab_size": 128256}}}}"#
    );
    let m = read(&awq).unwrap();
    assert_eq!((m.num_layers, m.checkpoint_precision), (32, Some(Precision::Int4)));
    // A null at the top is absent: text_config is read.
    let null = format!(r#"{{"num_hidden_layers": null, "text_config": {{{sizes}, "vocab_size": 128256}}}}"#);
    assert_eq!(read(&null).unwrap().num_layers, 32);
    // vocab_size at the top, the rest nested.
    let partial = format!(r#"{{"vocab_size": 128256, "text_config": {{{sizes}}}}}"#);
    assert_eq!(read(&partial).unwrap().vocab_size, 128256);
    // The nested value wins over the top's; a key in neither is named with where it was looked for.
    let both = format!(r#"{{"vocab_size": 7, "text_config": {{{sizes}, "vocab_size": 128256}}}}"#);
    assert_eq!(read(&both).unwrap().vocab_size, 128256);
    let e = read(&format!(r#"{{"text_config": {{{sizes}}}}}"#)).unwrap_err().to_string();
    assert!(e.contains("`vocab_size` is missing (looked for in `text_config`, then at the top level)"), "{e}");
    // A byte-order mark before the JSON is not the config's.
    let flat = format!("\u{feff}{{{sizes}, \"vocab_size\": 128256}}");
    assert_eq!(read(&flat).unwrap().num_layers, 32);
}

#[test]
fn gpt_oss_counts_what_its_model_card_gives() {
    // OpenAI's card: 117 B and 21 B parameters, 5.1 B and 3.6 B active (the
    // active count with the unembedding, one table of the two).
    let big = ModelSpec::lookup("openai/gpt-oss-120b").unwrap();
    let small = ModelSpec::lookup("gpt-oss-20b").unwrap();
    let table = big.vocab_size as f64 * big.hidden_size as f64;
    for (m, total, active) in [(&big, 116.8e9, 5.1e9), (&small, 20.9e9, 3.6e9)] {
        let (t, a) = (m.total_params() as f64, m.active_params() as f64 + table);
        assert!((t / total - 1.0).abs() < 0.01, "{} total {t:e}", m.name);
        assert!((a / active - 1.0).abs() < 0.02, "{} active {a:e}", m.name);
        assert_eq!(m.checkpoint_precision, Some(Precision::Mxfp4));
        assert_eq!(m.sliding_window, Some(SlidingWindow { window: 128, layers: m.num_layers / 2, chunked: false }));
    }
    // MXFP4 on the experts alone: 4.25 bits each, the attention, router and
    // embeddings 16-bit; the 120B fits an 80 GB GPU, as OpenAI says.
    let experts = big.expert_params_all_layers() as f64 * 128.0;
    let want = experts * (0.5 + 1.0 / 32.0) + (big.total_params() as f64 - experts) * 2.0;
    assert!((big.weight_bytes(Precision::Mxfp4) - want).abs() < 1.0);
    assert!(big.weight_bytes(Precision::Mxfp4) < 70e9, "{}", big.weight_bytes(Precision::Mxfp4));
    // A dense model takes MXFP4 over its whole body.
    let dense = ModelSpec::lookup("llama-3.1-8b").unwrap();
    assert_eq!(
        dense.weight_bytes(Precision::Mxfp4),
        dense.weight_bytes(Precision::Bf16) - dense.body_params() as f64 * (2.0 - 0.53125)
    );
}

#[test]
fn mxfp4_runs_against_fp8_activations_where_fp4_cores_are_and_16_bit_elsewhere() {
    assert_eq!("MXFP4".parse::<Precision>().unwrap(), Precision::Mxfp4);
    assert_eq!(Precision::Mxfp4.to_string(), "mxfp4");
    let b200 = GpuSpec::lookup("b200").unwrap();
    let h200 = GpuSpec::lookup("h200").unwrap();
    assert_eq!(b200.peak_flops(Precision::Mxfp4).unwrap(), b200.peak_flops(Precision::Fp8).unwrap());
    assert_eq!(h200.peak_flops(Precision::Mxfp4).unwrap(), h200.peak_flops(Precision::Bf16).unwrap());
}

#[test]
fn a_config_json_s_sliding_window_is_read_over_the_layers_it_names() {
    let base = r#""num_hidden_layers": 12, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512,
        "vocab_size": 1000, "max_position_embeddings": 32768"#;
    let read = |extra: &str| ModelSpec::from_hf_config_str(&format!("{{{base}, {extra}}}"), "m");
    let window = |extra: &str| read(extra).unwrap().sliding_window.map(|s| (s.window, s.layers));
    let types: Vec<String> =
        (0..12).map(|i| if i % 2 == 0 { "\"sliding_attention\"" } else { "\"full_attention\"" }.to_string()).collect();
    let gpt_oss = format!(r#""sliding_window": 128, "layer_types": [{}]"#, types.join(", "));
    assert_eq!(window(&gpt_oss), Some((128, 6)));
    // Mistral-7B-v0.1: every layer; its later releases (null): none.
    assert_eq!(window(r#""sliding_window": 4096"#), Some((4096, 12)));
    assert_eq!(window(r#""sliding_window": null"#), None);
    // Qwen2's released configs turn it off; turned on, from max_window_layers.
    assert_eq!(window(r#""sliding_window": 4096, "use_sliding_window": false"#), None);
    assert_eq!(
        window(r#""sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 8"#),
        Some((4096, 4))
    );
    // Gemma 2 every other layer; Gemma 3 five of each six.
    assert_eq!(window(r#""sliding_window": 4096, "model_type": "gemma2""#), Some((4096, 6)));
    assert_eq!(window(r#""sliding_window": 1024, "sliding_window_pattern": 6"#), Some((1024, 10)));
    // A window that holds the whole context changes nothing.
    assert_eq!(window(r#""sliding_window": 32768"#), None);
    // Refused, each with what to fix.
    let refused = |extra: &str| read(extra).unwrap_err().to_string();
    let e = refused(r#""sliding_window": 128, "layer_types": ["sliding_attention"]"#);
    assert!(e.contains("`layer_types` names 1 layers but num_hidden_layers is 12"), "{e}");
    let e = refused(&gpt_oss.replace(r#""sliding_window": 128, "#, ""));
    assert!(e.contains("`sliding_window` is missing"), "{e}");
    let e = refused(r#""sliding_window": 0"#);
    assert!(e.contains("`sliding_window` is 0"), "{e}");
    let e = refused(r#""sliding_window": "big""#);
    assert!(e.contains("`sliding_window` must be a non-negative integer"), "{e}");
}

#[test]
fn a_sliding_layer_holds_its_window_in_the_cache_not_the_whole_sequence() {
    // GPT-OSS: half the layers slide, so a block counts the other half's
    // bytes; a sequence takes a block per 16 tokens for them, and its
    // window's (at most ⌈128 / 16⌉ + 1 = 9) for the sliding half.
    let m = ModelSpec::lookup("gpt-oss-120b").unwrap();
    assert_eq!(m.kv_pool_layers(), 18);
    assert_eq!(
        m.kv_pool_bytes_per_token_per_gpu(KvCacheDtype::Auto, 1) * 2.0,
        m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 1)
    );
    assert_eq!(m.kv_blocks_for(100, 16), 7 + 7);
    assert_eq!(m.kv_blocks_for(1000, 16), 63 + 9);
    assert_eq!(m.kv_blocks_for(100_000, 16), 6250 + 9);
    // Every layer sliding (Mistral-7B-v0.1): the window alone.
    let mut all = m.clone();
    all.sliding_window = Some(SlidingWindow { window: 4096, layers: 36, chunked: false });
    assert_eq!(all.kv_pool_layers(), 36);
    assert_eq!((all.kv_blocks_for(1000, 16), all.kv_blocks_for(100_000, 16)), (63, 257));
    // None: every token's block.
    let dense = ModelSpec::lookup("llama-3.1-8b").unwrap();
    assert_eq!(dense.kv_blocks_for(1000, 16), 63);
}

#[test]
fn llama_4_counts_what_its_model_cards_give_and_its_config_json_reads_the_same() {
    // Meta's cards: 400 B and 109 B parameters, 17 B active each (the
    // active count with both embedding tables).
    let maverick = ModelSpec::lookup("meta-llama/Llama-4-Maverick-17B-128E-Instruct").unwrap();
    let scout = ModelSpec::lookup("llama-4-scout").unwrap();
    for (m, total) in [(&maverick, 400e9), (&scout, 109e9)] {
        let active = m.active_params() as f64 + m.embedding_params() as f64;
        assert!((m.total_params() as f64 / total - 1.0).abs() < 0.02, "{} total {}", m.name, m.total_params());
        assert!((active / 17e9 - 1.0).abs() < 0.02, "{} active {active:e}", m.name);
        assert_eq!(m.sliding_window, Some(SlidingWindow { window: 8192, layers: 36, chunked: true }));
    }
    assert_eq!((maverick.moe_layers(), maverick.dense_intermediate_size), (24, 16384));
    // Its experts are in every other layer, the second first
    // (`interleave_moe_layer_step` 2): each half of the layers holds 12 of
    // the dense ones.
    assert_eq!(maverick.dense_mlp_at, (0..48).step_by(2).collect::<Vec<u32>>());
    assert_eq!((maverick.dense_mlp_layers_in(0..24), maverick.dense_mlp_layers_in(24..48)), (12, 12));
    assert_eq!(ModelSpec::lookup("deepseek-v3").unwrap().dense_mlp_layers_in(0..15), 3);
    // Its config.json (the text_config's keys as Meta publishes them) reads
    // as the catalog's entry.
    let text = r#"{"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
        "text_config": {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_local_experts": 128, "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2, "vocab_size": 202048, "max_position_embeddings": 1048576,
        "attention_chunk_size": 8192, "tie_word_embeddings": false}}"#;
    let read = ModelSpec::from_hf_config_str(text, "maverick").unwrap();
    assert_eq!(ModelSpec { name: maverick.name.clone(), ..read.clone() }, maverick);
    // `no_rope_layers` given: its 1s are the chunked layers; a list of
    // another length, or of other values, is refused.
    let with = |rope: &str| {
        ModelSpec::from_hf_config_str(
            &text.replace(r#""attention_chunk_size""#, &format!(r#""no_rope_layers": {rope}, "attention_chunk_size""#)),
            "m",
        )
    };
    let ones: Vec<&str> = (0..48).map(|i| if i % 2 == 0 { "1" } else { "0" }).collect();
    assert_eq!(with(&format!("[{}]", ones.join(","))).unwrap().sliding_window.unwrap().layers, 24);
    let e = with("[1, 0]").unwrap_err().to_string();
    assert!(e.contains("`no_rope_layers` must be a list of 0 and 1, one for each of the 48 layers"), "{e}");
    let e = with(&format!("[{}]", ["2"; 48].join(","))).unwrap_err().to_string();
    assert!(e.contains("its element 0 is 2"), "{e}");
}
