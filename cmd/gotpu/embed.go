package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
)

// embedReport is the output of `gotpu embed --json`.
type embedReport struct {
	Model      string      `json:"model"`
	Dim        int         `json:"dim"`
	Embeddings [][]float32 `json:"embeddings"`
	Count      int         `json:"count"`
	Seconds    float64     `json:"seconds"`
}

const embedLong = `Embed each line of standard input with a sentence-embedding model: a
Hugging Face BERT or RoBERTa directory (config.json, model.safetensors,
tokenizer.json), usually a sentence-transformers model such as
all-MiniLM-L6-v2.

The embedding is computed as sentence-transformers computes it: the text is
tokenized (lowercased first when sentence_bert_config.json says
do_lower_case), truncated to max_seq_length tokens, run through the encoder
in batches of --batch-size texts (sorted by length, right-padded), pooled as
the Pooling module's config says (1_Pooling/config.json: mean, cls, max,
mean_sqrt_len_tokens, weightedmean, lasttoken) and L2-normalized when
modules.json lists a Normalize module. A directory without modules.json is
pooled as sentence-transformers pools a plain transformers model: the mean
of the token states, not normalized. Modules gotpu does not run (Dense,
...) make the command fail rather than return different vectors.

Every line is one text (an empty line is the empty text); a final newline
does not add one. Without --json each embedding prints as one line of
space-separated numbers (each the shortest decimal that reads back as the
same float32), in input order.

With --json the output is one JSON object with these stable keys:
  model       the --model path as given
  dim         the number of values in each embedding
  embeddings  list of embeddings in input order, each a list of numbers
  count       the number of embeddings (input lines)
  seconds     wall time of tokenizing, running and pooling, in seconds
              (loading the model excluded)

A missing or unsupported model, or a device error, makes the command exit
non-zero with a one-line error.`

func newEmbedCmd() *cobra.Command {
	var (
		path, dev, dt string
		batch         int
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "embed --model PATH [--device DEV] [--dtype DT] [--batch-size N] [--json] < lines",
		Short: "Sentence embeddings of standard input's lines with a BERT-class model",
		Long:  embedLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return errors.New("embed: --model PATH is required")
			}
			if batch <= 0 {
				return fmt.Errorf("embed: --batch-size must be positive, got %d", batch)
			}
			d, err := gotpu.Device(dev)
			if err != nil {
				return fmt.Errorf("embed: --device: %w", err)
			}
			var want dtype.DType
			if dt != "" {
				if want, err = dtype.Parse(dt); err != nil {
					return fmt.Errorf("embed: --dtype: %w", err)
				}
			}
			texts, err := readLines(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("embed: read standard input: %w", err)
			}
			m, err := models.LoadPath(path, models.Options{Device: d, DType: want})
			if err != nil {
				return fmt.Errorf("embed: %w", err)
			}
			if m.Encoder == nil {
				return fmt.Errorf("embed: %s is a %s model; embed runs encoders (bert, roberta)", path, m.Config.ModelType)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			start := time.Now()
			vecs, err := m.EmbedWith(ctx, texts, models.EmbedOptions{BatchSize: batch})
			if err != nil {
				return fmt.Errorf("embed: %w", err)
			}
			secs := time.Since(start).Seconds()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				return enc.Encode(embedReport{Model: path, Dim: m.Sentence.Dim(m.Config.HiddenSize), Embeddings: vecs, Count: len(vecs), Seconds: secs})
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			var buf []byte
			for _, v := range vecs {
				buf = buf[:0]
				for i, x := range v {
					if i > 0 {
						buf = append(buf, ' ')
					}
					buf = strconv.AppendFloat(buf, float64(x), 'g', -1, 32)
				}
				buf = append(buf, '\n')
				if _, err := out.Write(buf); err != nil {
					return err
				}
			}
			return out.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "model", "", "model directory (config.json, model.safetensors, tokenizer.json)")
	f.StringVar(&dev, "device", "cpu", "device to run on")
	f.StringVar(&dt, "dtype", "", "compute dtype: f32, bf16, f16 (default: the checkpoint's)")
	f.IntVar(&batch, "batch-size", 32, "texts per forward pass")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (keys documented above)")
	return cmd
}

// readLines splits r into lines without their "\n" or "\r\n"; a final
// newline does not start another line.
func readLines(r io.Reader) ([]string, error) {
	br := bufio.NewReader(r)
	lines := []string{}
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 || err == nil {
			line = strings.TrimSuffix(line, "\n")
			lines = append(lines, strings.TrimSuffix(line, "\r"))
		}
		if err == io.EOF {
			return lines, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func init() {
	rootCmd.AddCommand(newEmbedCmd())
}
