package constrain

import (
	"encoding/json"
	"fmt"
)

// ResponseFormat compiles an OpenAI chat/completions response_format
// object over v:
//
//	{"type": "text"}                                  -> nil, nil (no constraint)
//	{"type": "json_object"}                           -> JSONObject
//	{"type": "json_schema", "json_schema": {"name": "...", "schema": {...}, "strict": true}}
//
// A json_schema without "schema" is any JSON value ({}); "name",
// "description" and "strict" are accepted and ignored (the output always
// follows the schema strictly). Errors wrap ErrSchema and are the API's
// 400s.
func (v *Vocab) ResponseFormat(raw []byte) (*Grammar, error) {
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, fmt.Errorf("%w: response_format: %v", ErrSchema, err)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return v.JSONObject(), nil
	case "json_schema":
		if rf.JSONSchema == nil {
			return nil, fmt.Errorf("%w: response_format: json_schema is missing", ErrSchema)
		}
		schema := []byte(rf.JSONSchema.Schema)
		if len(schema) == 0 {
			schema = []byte("{}")
		}
		g, err := v.Schema(schema)
		if err != nil {
			return nil, fmt.Errorf("response_format.json_schema.schema: %w", err)
		}
		return g, nil
	}
	return nil, fmt.Errorf("%w: response_format: unknown type %q (text, json_object or json_schema)", ErrSchema, rf.Type)
}
