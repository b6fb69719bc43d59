# Writes a tiny random llama GGUF (2 layers, 64 wide) around the vocabulary
# of one of llama.cpp's vocab-only test files: noise for text, but a real
# model to llama-server. Usage: llamacpp_tiny_model.py VOCAB.gguf OUT.gguf
import sys, numpy as np, gguf
src = gguf.GGUFReader(sys.argv[1])
w = gguf.GGUFWriter(sys.argv[2], "llama")
n_embd, n_ff, n_head, n_layer, n_ctx = 64, 128, 4, 2, 4096
w.add_name("tiny-llama-random")
w.add_block_count(n_layer); w.add_context_length(n_ctx); w.add_embedding_length(n_embd)
w.add_feed_forward_length(n_ff); w.add_head_count(n_head); w.add_head_count_kv(n_head)
w.add_layer_norm_rms_eps(1e-5); w.add_rope_dimension_count(n_embd // n_head)
w.add_file_type(0)
def f(k): return src.fields[k].contents()
toks = f("tokenizer.ggml.tokens")
w.add_vocab_size(len(toks))
w.add_tokenizer_model("llama"); w.add_tokenizer_pre("default")
w.add_token_list(toks); w.add_token_scores(f("tokenizer.ggml.scores")); w.add_token_types(f("tokenizer.ggml.token_type"))
w.add_bos_token_id(1); w.add_eos_token_id(2); w.add_unk_token_id(0)
w.add_add_bos_token(True); w.add_add_eos_token(False)
w.add_chat_template("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
rng = np.random.default_rng(0)
def t(name, *shape, ones=False):
    a = np.ones(shape, np.float32) if ones else (rng.standard_normal(shape) * 0.02).astype(np.float32)
    w.add_tensor(name, a)
V = len(toks)
t("token_embd.weight", V, n_embd); t("output_norm.weight", n_embd, ones=True); t("output.weight", V, n_embd)
for i in range(n_layer):
    p = f"blk.{i}."
    t(p+"attn_norm.weight", n_embd, ones=True); t(p+"ffn_norm.weight", n_embd, ones=True)
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"): t(p+n+".weight", n_embd, n_embd)
    t(p+"ffn_gate.weight", n_ff, n_embd); t(p+"ffn_up.weight", n_ff, n_embd); t(p+"ffn_down.weight", n_embd, n_ff)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
