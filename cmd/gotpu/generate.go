package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
)

// generateOutput is `gotpu generate --json`.
type generateOutput struct {
	Model                  string  `json:"model"`
	Device                 string  `json:"device"`
	DType                  string  `json:"dtype"`
	Mode                   string  `json:"mode"`
	PromptIDs              []int   `json:"prompt_ids"`
	IDs                    []int   `json:"ids"`
	Text                   string  `json:"text"`
	FinishReason           string  `json:"finish_reason"`
	PrefillTokens          int     `json:"prefill_tokens"`
	PrefillSeconds         float64 `json:"prefill_seconds"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeTokens           int     `json:"decode_tokens"`
	DecodeSeconds          float64 `json:"decode_seconds"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
	CompiledPrograms       int     `json:"compiled_programs"`
	CompiledStepsReplayed  int     `json:"compiled_steps_replayed"`
	TP                     int     `json:"tp"`
}

// textStream turns generated tokens into text pieces as they come,
// holding back an incomplete UTF-8 sequence until its last byte arrives,
// and applies the stop strings: out receives only text that is final.
type textStream struct {
	decode  func([]int) (string, error)
	stop    *sample.Stop
	out     func(string) error
	ids     []int
	decoded int
	text    strings.Builder
}

// add takes the next token; it reports whether a stop string completed.
func (s *textStream) add(tok int) (bool, error) {
	if s.stop.IsEOS(tok) {
		return false, nil
	}
	s.ids = append(s.ids, tok)
	full, err := s.decode(s.ids)
	if err != nil {
		return false, err
	}
	if strings.HasSuffix(full, "\uFFFD") || len(full) <= s.decoded {
		return false, nil
	}
	piece := full[s.decoded:]
	s.decoded = len(full)
	text, stopped := s.stop.Push(piece)
	return stopped, s.emit(text)
}

func (s *textStream) emit(text string) error {
	s.text.WriteString(text)
	if s.out == nil || text == "" {
		return nil
	}
	return s.out(text)
}

// finish emits what the stop strings held back, unless one matched.
func (s *textStream) finish() error {
	if s.stop.Stopped() {
		return nil
	}
	return s.emit(s.stop.Flush())
}

func newGenerateCmd() *cobra.Command {
	var (
		mf           modelFlags
		sf           samplingFlags
		ids, prompt  string
		system       string
		useChat      bool
		maxNewTokens int
		asJSON       bool
		tp           int
	)
	cmd := &cobra.Command{
		Use:   "generate --model PATH [--prompt TEXT | - | --ids 1,2,3] [flags]",
		Short: "Generate text with a causal language model",
		Long: `Continue a prompt with a causal language model: --prompt TEXT, "-" as the
argument to read the prompt from standard input, or --ids for token ids.
The prompt is tokenized with the tokenizer's special tokens (as transformers'
tokenizer(text) does); with --chat it is a user message (after --system, if
given) rendered by the model's chat template with the generation prompt, as
transformers' apply_chat_template renders and tokenizes it.

Decoding follows the model's generation_config.json when it sets do_sample
and no decoding flag is given (as transformers' generate does); otherwise it
is greedy unless --temperature is positive; then --top-k, --top-p, --min-p
and the penalties apply in transformers' order. --seed makes the draws
reproducible on every run, device and mode. --max-new-tokens bounds the
new tokens; the model's end-of-sequence ids (generation_config.json, else
config.json) and --stop strings end it early (a stop string is not printed). Text is
streamed as it is generated; the last line (on standard error) gives the
prefill and decode speeds.

--mode selects how each forward step runs: strict (op by op), debug
(synchronous, checked), fused (recorded and run as fused programs) or
compiled (one compiled program per step shape, replayed).

With --json nothing is streamed and one object is printed, with these stable
keys: model, device, dtype, mode, prompt_ids, ids (the new tokens), text (the
new tokens decoded, special tokens skipped, cut before a stop string), finish_reason ("stop": an
end-of-sequence id or stop string, "length": --max-new-tokens reached),
prefill_tokens, prefill_seconds, prefill_tokens_per_second, decode_tokens
(tokens after the first), decode_seconds, decode_tokens_per_second,
compiled_programs and compiled_steps_replayed (compiled mode), tp (the
tensor-parallel ranks, 1 without --tp).

--tp N shards the model over the N ranks of a job that gotpu run starts
(gotpu run --nproc-per-node N -- gotpu generate --tp N --model PATH ...):
attention by whole key/value heads (uneven shares allowed), the MLP by
its intermediate features, the embedding and output head by vocabulary,
with all-reduces after the attention output and MLP down projections and
an all-gather of the logits (package dist's shared-memory collectives, so
every rank runs on one host). Every rank computes the same tokens; rank 0
prints. The collectives run between ops on the host, so --tp runs in
strict or debug mode (not fused or compiled). N may not exceed the
model's key/value heads.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] != "-" || prompt != "" {
					return errors.New("generate: the only argument accepted is - (read the prompt from standard input) instead of --prompt")
				}
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("generate: read standard input: %w", err)
				}
				prompt = strings.TrimSuffix(string(b), "\n")
				if prompt == "" {
					return errors.New("generate: empty prompt on standard input")
				}
			}
			if (ids == "") == (prompt == "") {
				return errors.New("generate: give exactly one of --prompt (or -) and --ids")
			}
			if useChat && ids != "" {
				return errors.New("generate: --chat needs a text prompt, not --ids")
			}
			if tp < 1 {
				return fmt.Errorf("generate: --tp %d: want 1 or more ranks", tp)
			}
			if tp > 1 && mf.mode != "strict" && mf.mode != "debug" {
				return fmt.Errorf("generate: --tp runs its collectives between ops on the host, so it runs in strict or debug mode, not --mode %s", mf.mode)
			}
			m, restore, err := mf.load()
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			defer restore()
			if m.LM == nil {
				return fmt.Errorf("generate: %s is not a causal language model", mf.path)
			}
			w := cmd.OutOrStdout()
			errw := cmd.ErrOrStderr()
			if tp > 1 {
				g, err := joinTP(cmd.Context(), m.LM, tp)
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				defer g.Close()
				if g.Rank() != 0 {
					w, errw = io.Discard, io.Discard
				}
			}
			var in []int
			if ids != "" {
				if in, err = parseIDs(ids); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
			} else if useChat {
				var msgs []chat.Message
				if system != "" {
					msgs = append(msgs, chat.Message{Role: "system", Content: system})
				}
				if in, err = chatIDs(m, append(msgs, chat.Message{Role: "user", Content: prompt})); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
			} else {
				if m.Tokenizer == nil {
					return fmt.Errorf("generate: %s has no tokenizer.json; use --ids", mf.path)
				}
				e, err := m.Tokenizer.TryEncode(prompt, true)
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				in = e.IDs
			}
			choose, err := sf.chooser(m, 1)
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			eos := eosIDs(m)
			opts := models.GenerateOptions{MaxNewTokens: maxNewTokens, Choose: choose, EOS: eos}
			stop, err := sample.NewStop(eos, sf.stops)
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			if len(sf.stops) > 0 && m.Tokenizer == nil {
				return fmt.Errorf("generate: --stop needs the model's tokenizer.json")
			}
			var ts *textStream
			if m.Tokenizer != nil {
				ts = &textStream{stop: stop, decode: func(ids []int) (string, error) { return m.Tokenizer.Decode(ids, true) }}
				if !asJSON {
					ts.out = func(text string) error { _, err := io.WriteString(w, text); return err }
				}
				stopped := false
				opts.OnToken = func(_, tok int) error {
					var err error
					stopped, err = ts.add(tok)
					return err
				}
				opts.Stop = func(int, []int) bool { return stopped }
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer cancel()
			res, err := m.LM.Generate(ctx, [][]int{in}, opts)
			if err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("generate: %w", err)
			}
			out := generateOutput{Model: mf.path, Device: mf.device, DType: m.LM.DType.String(), Mode: mf.mode,
				PromptIDs: in, IDs: res.Tokens[0], FinishReason: "length",
				PrefillTokens: res.PrefillTokens, PrefillSeconds: res.Prefill.Seconds(),
				DecodeTokens: res.DecodeSteps, DecodeSeconds: res.Decode.Seconds(), TP: tp}
			if out.IDs == nil {
				out.IDs = []int{}
			}
			if len(out.IDs) < maxNewTokens || ts != nil && ts.stop.Stopped() {
				out.FinishReason = "stop"
			}
			if out.PrefillSeconds > 0 {
				out.PrefillTokensPerSecond = float64(out.PrefillTokens) / out.PrefillSeconds
			}
			if out.DecodeSeconds > 0 {
				out.DecodeTokensPerSecond = float64(out.DecodeTokens) / out.DecodeSeconds
			}
			st := m.LM.CompileStats()
			out.CompiledPrograms, out.CompiledStepsReplayed = st.Programs, st.Replays
			if ts != nil {
				if err := ts.finish(); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				out.Text = ts.text.String()
			}
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetEscapeHTML(false)
				return enc.Encode(out)
			}
			if m.Tokenizer == nil {
				fmt.Fprintln(w, strings.Trim(fmt.Sprint(out.IDs), "[]"))
			} else {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(errw, "prefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s\n",
				out.PrefillTokens, out.PrefillTokensPerSecond, out.DecodeTokens, out.DecodeTokensPerSecond)
			return nil
		},
	}
	mf.register(cmd.Flags())
	sf.register(cmd.Flags())
	cmd.Flags().StringVar(&prompt, "prompt", "", "prompt text")
	cmd.Flags().StringVar(&ids, "ids", "", "comma-separated prompt token ids")
	cmd.Flags().BoolVar(&useChat, "chat", false, "send the prompt as a user message through the model's chat template")
	cmd.Flags().StringVar(&system, "system", "", "with --chat, a system message before the prompt")
	cmd.Flags().IntVar(&maxNewTokens, "max-new-tokens", 128, "most tokens to generate")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of streaming text")
	cmd.Flags().IntVar(&tp, "tp", 1, "tensor-parallel ranks: shard the model over the ranks of a gotpu run job of this size")
	return cmd
}

// joinTP joins the job the launcher started (dist.Init) and shards lm over
// its ranks, which must number tp.
func joinTP(ctx context.Context, lm *models.CausalLM, tp int) (*dist.Group, error) {
	hint := fmt.Sprintf("start the ranks with gotpu run --nproc-per-node %d -- gotpu generate --tp %d ...", tp, tp)
	if os.Getenv("WORLD_SIZE") == "" {
		return nil, fmt.Errorf("--tp %d: no job to join (WORLD_SIZE is not set): %s", tp, hint)
	}
	g, err := dist.Init(ctx, dist.Options{})
	if err != nil {
		return nil, fmt.Errorf("--tp %d: %w", tp, err)
	}
	if g.Size() != tp {
		g.Close()
		return nil, fmt.Errorf("--tp %d in a job of %d ranks: the tensor-parallel group is the whole job; %s", tp, g.Size(), hint)
	}
	if err := lm.ShardTensorParallel(g); err != nil {
		g.Close()
		return nil, fmt.Errorf("--tp %d: %w", tp, err)
	}
	return g, nil
}

// eosIDs are the ids that end generation: generation_config.json's, else
// config.json's.
func eosIDs(m *models.Model) []int {
	if m.Generation != nil && len(m.Generation.EOSTokenIDs) > 0 {
		return m.Generation.EOSTokenIDs
	}
	return m.Config.EOSTokenIDs
}

func init() {
	rootCmd.AddCommand(newGenerateCmd())
}
