package serve

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/gotpu/gotpu/hf/chat"
)

// maxEmbedInputs bounds the texts of one /v1/embeddings request (OpenAI's
// limit).
const maxEmbedInputs = 2048

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	defer func() { s.metrics.duration.With("/v1/embeddings").Observe(time.Since(start).Seconds()) }()
	var req embeddingRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if s.o.Embedder == nil {
		return notFound("model_not_found", "the model %q does not exist: this server runs no embedding model (start it with --embed-model)", req.Model)
	}
	if req.Model != "" && req.Model != s.o.EmbedModelName {
		return notFound("model_not_found", "the model %q does not exist (the embedding model is %q)", req.Model, s.o.EmbedModelName)
	}
	var texts []string
	var one string
	switch {
	case len(req.Input) == 0 || string(req.Input) == "null":
		return badRequest("input", "input is required")
	case json.Unmarshal(req.Input, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(req.Input, &texts) == nil:
		if len(texts) == 0 {
			return badRequest("input", "input is an empty list")
		}
		if len(texts) > maxEmbedInputs {
			return badRequest("input", "input has %d texts; at most %d per request", len(texts), maxEmbedInputs)
		}
	default:
		return badRequest("input", "input must be a string or a list of strings (token ids are not supported)")
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return badRequest("encoding_format", "encoding_format %q is not float or base64", req.EncodingFormat)
	}
	tokens := 0
	for _, t := range texts {
		n, err := s.o.Embedder.CountTokens(t)
		if err != nil {
			return badRequest("input", "tokenizing the input: %v", err)
		}
		tokens += n
	}
	vecs, err := s.o.Embedder.Embed(r.Context(), texts)
	if err != nil {
		if r.Context().Err() != nil {
			return clientGone()
		}
		return internalError(err)
	}
	if req.Dimensions != nil && len(vecs) > 0 && *req.Dimensions != len(vecs[0]) {
		return badRequest("dimensions", "dimensions %d: the model's embeddings have %d and cannot be shortened", *req.Dimensions, len(vecs[0]))
	}
	out := embeddingResponse{Object: "list", Model: s.o.EmbedModelName, Usage: embeddingUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vecs {
		d := embeddingData{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			// Little-endian float32s, as OpenAI's base64 format decodes
			// with numpy.frombuffer(..., dtype=float32).
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			d.Embedding = base64.StdEncoding.EncodeToString(b)
		}
		out.Data = append(out.Data, d)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// tokenizeRequest accepts both shapes: vLLM's {"prompt"} or {"messages"}
// and llama-server's {"content", "add_special", "with_pieces"}.
type tokenizeRequest struct {
	Model               string          `json:"model"`
	Prompt              *string         `json:"prompt"`
	Content             *string         `json:"content"`
	Messages            []chatMessageIn `json:"messages"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	AddSpecial          *bool           `json:"add_special"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	WithPieces          bool            `json:"with_pieces"`
	ReturnTokenStrs     bool            `json:"return_token_strs"`
}

// handleTokenize answers {"tokens", "count", "max_model_len"} (vLLM's
// keys; llama-server's clients read "tokens"), with "token_strs" when
// asked; llama-server's with_pieces makes tokens [{"id", "piece"}].
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) error {
	var req tokenizeRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if s.o.Generator == nil {
		return notFound("model_not_found", "this server runs no language model to tokenize for")
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	var ids []int
	var err error
	switch {
	case req.Messages != nil:
		if s.o.Chat == nil {
			return badRequest("messages", "the model has no chat template")
		}
		msgs, err := chatMessages(req.Messages)
		if err != nil {
			return err
		}
		gen := true
		if req.AddGenerationPrompt != nil {
			gen = *req.AddGenerationPrompt
		}
		text, err := s.o.Chat.Render(msgs, chat.RenderOptions{AddGenerationPrompt: gen})
		if err != nil {
			return badRequest("messages", "rendering the chat template: %v", err)
		}
		add := req.AddSpecialTokens != nil && *req.AddSpecialTokens
		if ids, err = s.o.Tokenizer.Encode(text, add); err != nil {
			return badRequest("messages", "tokenizing: %v", err)
		}
	case req.Prompt != nil || req.Content != nil:
		text, add := "", true
		if req.Prompt != nil {
			text = *req.Prompt
			if req.AddSpecialTokens != nil {
				add = *req.AddSpecialTokens
			}
		} else {
			// llama-server's /tokenize adds no special tokens by default.
			text, add = *req.Content, req.AddSpecial != nil && *req.AddSpecial
		}
		if ids, err = s.o.Tokenizer.Encode(text, add); err != nil {
			return badRequest("prompt", "tokenizing: %v", err)
		}
	default:
		return badRequest("prompt", "send prompt (or content, or messages)")
	}
	resp := map[string]any{"count": len(ids), "max_model_len": s.o.Generator.ContextLength(), "tokens": ids}
	if req.WithPieces || req.ReturnTokenStrs {
		pieces := make([]string, len(ids))
		for i, id := range ids {
			pieces[i], _ = s.o.Tokenizer.Decode([]int{id}, false)
		}
		if req.ReturnTokenStrs {
			resp["token_strs"] = pieces
		}
		if req.WithPieces {
			withPieces := make([]map[string]any, len(ids))
			for i, id := range ids {
				withPieces[i] = map[string]any{"id": id, "piece": pieces[i]}
			}
			resp["tokens"] = withPieces
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// handleDetokenize answers {"prompt", "content"} (vLLM's and
// llama-server's keys) for {"tokens": [...]}.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if s.o.Generator == nil {
		return notFound("model_not_found", "this server runs no language model to detokenize for")
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	if req.Tokens == nil {
		return badRequest("tokens", "tokens is required")
	}
	vocab := s.o.Generator.VocabSize()
	for _, id := range req.Tokens {
		if id < 0 || id >= vocab {
			return badRequest("tokens", "token id %d is outside the vocabulary [0, %d)", id, vocab)
		}
	}
	text, err := s.o.Tokenizer.Decode(req.Tokens, false)
	if err != nil {
		return badRequest("tokens", "decoding: %v", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text, "content": text})
	return nil
}
