// Package models runs Hugging Face language models on gotpu: it loads a
// model directory (config.json, safetensors weights, tokenizer.json,
// generation_config.json) onto any device, builds the family's network
// from the runtime's tensor ops, and generates text with a preallocated KV
// cache (Generate) or steps many sequences over a paged one (ForwardPaged,
// the serve engine's forward).
//
// Families: GPT-2, Llama 1-3 (with every rope scaling transformers knows:
// linear, dynamic, YaRN, Llama 3, LongRoPE), Mistral (sliding window),
// Qwen2 (q/k/v bias), Qwen3 (q/k norm), Gemma 1-3 (embedding scale, (1+w)
// RMSNorm, sandwich norms, soft-capping, local/global layers). One decoder
// implementation covers them all; what differs is a handful of switches
// derived from the config (arch). Parameters are named as in transformers'
// state dicts, so nn.StateDict of a model reads like the checkpoint.
//
// Encoders: BERT and RoBERTa (transformers' BertModel / RobertaModel) load
// into Model.Encoder instead of Model.LM; Encoder.Forward returns
// last_hidden_state. Model.Embed turns texts into sentence embeddings as
// sentence-transformers does, following the directory's modules.json,
// Pooling config, sentence_bert_config.json and Normalize module; a
// directory without modules.json gets sentence-transformers' default for a
// plain transformers model, mean pooling without normalization.
//
// Weights are read through a Source (safetensors here; GGUF elsewhere) and
// matrices are held as a Weight, an interface that a block-quantized
// layout can implement without dequantizing the whole matrix.
//
// Numerics follow transformers: RoPE frequencies in f32, RMSNorm in f32,
// Gemma's constants rounded to the model's dtype. Every model is tested
// against transformers on tiny random checkpoints (testdata/models);
// embeddings are checked against sentence-transformers on the real
// all-MiniLM-L6-v2 (tools/stref/fetch_minilm.sh).
package models
