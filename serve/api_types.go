package serve

import "encoding/json"

// samplingFields are the request fields /v1/completions and
// /v1/chat/completions share.
type samplingFields struct {
	Model               string             `json:"model"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float64           `json:"min_p"`
	Seed                *int64             `json:"seed"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	N                   *int               `json:"n"`
	Stop                json.RawMessage    `json:"stop"`
	Stream              bool               `json:"stream"`
	StreamOptions       *streamOptions     `json:"stream_options"`
	ResponseFormat      *responseFormat    `json:"response_format"`
	User                string             `json:"user"`
	// IgnoreEOS (vLLM's and llama-server's extension) keeps generating
	// past the end-of-sequence tokens, up to max_tokens (benchmarks).
	IgnoreEOS bool `json:"ignore_eos"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *jsonSchemaSpec `json:"json_schema"`
}

type jsonSchemaSpec struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict *bool           `json:"strict"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	samplingFields
	Messages    []chatMessageIn `json:"messages"`
	Logprobs    bool            `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	Tools       []toolSpec      `json:"tools"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
	// ChatTemplateKwargs are extra template variables (vLLM's extension,
	// e.g. enable_thinking).
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
	// AddGenerationPrompt (default true) and ContinueFinalMessage are
	// vLLM's extensions: continue_final_message makes the model continue
	// the last (assistant) message instead of opening a new turn.
	AddGenerationPrompt  *bool `json:"add_generation_prompt"`
	ContinueFinalMessage bool  `json:"continue_final_message"`
}

type chatMessageIn struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []toolCallOut   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// toolSpec is one entry of "tools"; Raw keeps the object as sent, key order
// included, for the chat template.
type toolSpec struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
	Raw      json.RawMessage
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

func (t *toolSpec) UnmarshalJSON(b []byte) error {
	type plain toolSpec
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = toolSpec(p)
	t.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	samplingFields
	Prompt   json.RawMessage `json:"prompt"`
	Echo     bool            `json:"echo"`
	Logprobs *int            `json:"logprobs"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
}

// usage is OpenAI's usage object.
type usage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails *promptTokenDetails `json:"prompt_tokens_details,omitempty"`
}

type promptTokenDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// Chat responses.

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessageOut  `json:"message"`
	Logprobs     *chatLogprobs   `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
}

type chatMessageOut struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	ToolCalls []toolCallOut `json:"tool_calls,omitempty"`
}

type toolCallOut struct {
	Index    *int            `json:"index,omitempty"`
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type,omitempty"`
	Function toolCallFuncOut `json:"function"`
}

type toolCallFuncOut struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float32          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage"`
	// withUsage keeps "usage": null in chunks when include_usage is set.
	withUsage bool
}

// MarshalJSON drops "usage" unless include_usage asked for it (then the
// usage of every chunk but the last is null, as OpenAI sends it).
func (c chatChunk) MarshalJSON() ([]byte, error) {
	type plain chatChunk
	if c.withUsage || c.Usage != nil {
		return json.Marshal(plain(c))
	}
	type noUsage struct {
		ID      string            `json:"id"`
		Object  string            `json:"object"`
		Created int64             `json:"created"`
		Model   string            `json:"model"`
		Choices []chatChunkChoice `json:"choices"`
	}
	return json.Marshal(noUsage{c.ID, c.Object, c.Created, c.Model, c.Choices})
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatDelta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []toolCallOut `json:"tool_calls,omitempty"`
}

// Completion responses.

type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
	// withUsage: see chatChunk.
	withUsage bool
}

// MarshalJSON: see chatChunk.MarshalJSON.
func (c completion) MarshalJSON() ([]byte, error) {
	type plain struct {
		ID      string             `json:"id"`
		Object  string             `json:"object"`
		Created int64              `json:"created"`
		Model   string             `json:"model"`
		Choices []completionChoice `json:"choices"`
		Usage   *usage             `json:"usage"`
	}
	p := plain{c.ID, c.Object, c.Created, c.Model, c.Choices, c.Usage}
	if c.withUsage || c.Usage != nil {
		return json.Marshal(p)
	}
	type noUsage struct {
		ID      string             `json:"id"`
		Object  string             `json:"object"`
		Created int64              `json:"created"`
		Model   string             `json:"model"`
		Choices []completionChoice `json:"choices"`
	}
	return json.Marshal(noUsage{c.ID, c.Object, c.Created, c.Model, c.Choices})
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// completionLogprobs is the legacy completions logprobs format.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Embeddings.

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Models.

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}
