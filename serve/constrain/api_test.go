package constrain_test

import (
	"fmt"

	"github.com/gotpu/gotpu/serve"
	"github.com/gotpu/gotpu/serve/constrain"
)

// A *Constraint is a serve.Constraint. This is an external test so that
// serve may import constrain without a test import cycle.
var _ serve.Constraint = (*constrain.Constraint)(nil)

// The server's use: one Vocab per model, one Grammar per response_format,
// one Constraint per sequence; the engine calls Allowed before each token
// and Accept after it.
func ExampleVocab_ResponseFormat() {
	// A toy vocabulary; a real one is constrain.TokenBytes(model tokenizer).
	vocab := [][]byte{nil /* EOS */, []byte(`{"`), []byte(`ok`), []byte(`":`), []byte(` true`), []byte(`}`), []byte(`1`)}
	v, err := constrain.NewVocab(vocab, []int{0})
	if err != nil {
		panic(err)
	}
	g, err := v.ResponseFormat([]byte(`{"type":"json_schema","json_schema":{"name":"r","schema":
		{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`))
	if err != nil {
		panic(err) // the API answers 400 with err.Error()
	}
	c := g.New()
	allow := make([]bool, len(vocab))
	var text []byte
	for {
		clear(allow)
		c.Allowed(allow) // false once only EOS may follow (EOS is then allowed)
		id := -1
		for i, ok := range allow { // a sampler picks among the allowed ids; here the first
			if ok {
				id = i
				break
			}
		}
		if err := c.Accept(id); err != nil {
			panic(err)
		}
		if id == 0 {
			break
		}
		text = append(text, vocab[id]...)
	}
	fmt.Println(string(text))
	_, err = v.ResponseFormat([]byte(`{"type":"json_schema","json_schema":{"schema":{"type":"integer","minimum":1}}}`))
	fmt.Println(err)
	// Output:
	// {"ok": true}
	// response_format.json_schema.schema: constrain: unsupported JSON-schema keyword "minimum" at /
}
