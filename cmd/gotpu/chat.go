package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
)

// chatIDs renders messages with the model's chat template (with the
// generation prompt) and tokenizes the result without adding special
// tokens, as transformers' apply_chat_template(tokenize=True) does.
func chatIDs(m *models.Model, messages []chat.Message) ([]int, error) {
	gguf := strings.EqualFold(filepath.Ext(m.Path), ".gguf")
	if m.Chat == nil {
		if gguf {
			return nil, fmt.Errorf("%s has no chat template (GGUF metadata tokenizer.chat_template): run it without --chat, on a raw prompt", m.Path)
		}
		return nil, fmt.Errorf("%s has no chat template (tokenizer_config.json chat_template, chat_template.jinja)", m.Path)
	}
	if m.Tokenizer == nil {
		if gguf {
			return nil, fmt.Errorf("%s has no tokenizer (GGUF metadata tokenizer.ggml.*)", m.Path)
		}
		return nil, fmt.Errorf("%s has no tokenizer.json", m.Path)
	}
	text, err := m.Chat.Render(messages, chat.RenderOptions{AddGenerationPrompt: true})
	if err != nil {
		return nil, err
	}
	e, err := m.Tokenizer.TryEncode(text, false)
	if err != nil {
		return nil, err
	}
	return e.IDs, nil
}

// chatTurn is one line of `gotpu chat --json`.
type chatTurn struct {
	Turn                   int     `json:"turn"`
	PromptTokens           int     `json:"prompt_tokens"`
	IDs                    []int   `json:"ids"`
	Text                   string  `json:"text"`
	FinishReason           string  `json:"finish_reason"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
}

func newChatCmd() *cobra.Command {
	var (
		mf           modelFlags
		sf           samplingFlags
		system       string
		maxNewTokens int
		asJSON       bool
	)
	cmd := &cobra.Command{
		Use:   "chat --model PATH [--system TEXT] [flags]",
		Short: "Chat with a model interactively, with its chat template and history",
		Long: `Read user messages from standard input, one per line, and answer each with
the model, keeping the conversation: every turn renders the whole history with
the model's chat template (as transformers' apply_chat_template with
add_generation_prompt) and generates until an end-of-sequence id, a --stop
string or --max-new-tokens. The answer streams as it is generated.

Lines starting with / are commands: /reset forgets the history, /exit ends
(so does the end of input). Sampling flags are those of gotpu generate.

With --json nothing streams; each turn prints one JSON object with these
stable keys: turn, prompt_tokens, ids, text, finish_reason ("stop" or
"length"), prefill_tokens_per_second, decode_tokens_per_second.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, restore, err := mf.load()
			if err != nil {
				return fmt.Errorf("chat: %w", err)
			}
			defer restore()
			if m.LM == nil {
				return fmt.Errorf("chat: %s is not a causal language model", mf.path)
			}
			if m.Chat == nil || m.Tokenizer == nil {
				return fmt.Errorf("chat: %s needs a tokenizer.json and a chat template", mf.path)
			}
			w := cmd.OutOrStdout()
			var history []chat.Message
			if system != "" {
				history = append(history, chat.Message{Role: "system", Content: system})
			}
			base := len(history)
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer cancel()
			in := bufio.NewScanner(cmd.InOrStdin())
			in.Buffer(make([]byte, 1<<20), 1<<24)
			turn := 0
			for {
				if !asJSON {
					fmt.Fprint(w, "> ")
				}
				if !in.Scan() {
					if err := in.Err(); err != nil {
						return fmt.Errorf("chat: read standard input: %w", err)
					}
					return nil
				}
				line := strings.TrimSpace(in.Text())
				switch line {
				case "":
					continue
				case "/exit", "/quit":
					return nil
				case "/reset":
					history = history[:base]
					continue
				}
				history = append(history, chat.Message{Role: "user", Content: line})
				ids, err := chatIDs(m, history)
				if err != nil {
					return fmt.Errorf("chat: %w", err)
				}
				choose, err := sf.chooser(m, 1)
				if err != nil {
					return fmt.Errorf("chat: %w", err)
				}
				eos := eosIDs(m)
				stop, err := sample.NewStop(eos, sf.stops)
				if err != nil {
					return fmt.Errorf("chat: %w", err)
				}
				ts := &textStream{stop: stop, decode: func(ids []int) (string, error) { return m.Tokenizer.Decode(ids, true) }}
				if !asJSON {
					ts.out = func(text string) error { _, err := io.WriteString(w, text); return err }
				}
				stopped := false
				res, err := m.LM.Generate(ctx, [][]int{ids}, models.GenerateOptions{
					MaxNewTokens: maxNewTokens, Choose: choose, EOS: eos,
					OnToken: func(_, tok int) error { var err error; stopped, err = ts.add(tok); return err },
					Stop:    func(int, []int) bool { return stopped },
				})
				if err != nil {
					return fmt.Errorf("chat: %w", err)
				}
				if err := ts.finish(); err != nil {
					return fmt.Errorf("chat: %w", err)
				}
				answer := ts.text.String()
				history = append(history, chat.Message{Role: "assistant", Content: answer})
				turn++
				t := chatTurn{Turn: turn, PromptTokens: len(ids), IDs: res.Tokens[0], Text: answer, FinishReason: "length"}
				if len(t.IDs) < maxNewTokens || stopped {
					t.FinishReason = "stop"
				}
				if s := res.Prefill.Seconds(); s > 0 {
					t.PrefillTokensPerSecond = float64(res.PrefillTokens) / s
				}
				if s := res.Decode.Seconds(); s > 0 {
					t.DecodeTokensPerSecond = float64(res.DecodeSteps) / s
				}
				if asJSON {
					enc := json.NewEncoder(w)
					enc.SetEscapeHTML(false)
					if err := enc.Encode(t); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(w)
				}
				if ctx.Err() != nil {
					return nil
				}
			}
		},
	}
	mf.register(cmd.Flags())
	sf.register(cmd.Flags())
	cmd.Flags().StringVar(&system, "system", "", "system message at the start of the conversation")
	cmd.Flags().IntVar(&maxNewTokens, "max-new-tokens", 256, "most tokens per answer")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per turn instead of streaming")
	return cmd
}

func init() {
	rootCmd.AddCommand(newChatCmd())
}
