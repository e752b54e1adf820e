// Package constrain is constrained decoding for the server: it compiles an
// OpenAI response_format (json_object, or json_schema with a JSON-schema
// subset) to a byte-level pushdown automaton and, before each token, masks
// the vocabulary to the tokens whose bytes the automaton accepts, so the
// generated text always parses as JSON and validates against the schema.
//
// Use:
//
//	v, err := constrain.NewVocab(constrain.TokenBytes(tok), eosIDs) // once per model
//	g, err := v.Schema(schemaJSON)                                  // per request (400 on error)
//	req.Constraint = g.New()                                        // per sequence
//
// (v.JSONObject() is response_format json_object; New does all three in one
// call.) A *Constraint has the methods of serve.Constraint (Allowed, Accept);
// this package does not import serve so that serve can import it.
//
// # Output form
//
// The automaton accepts one JSON value and nothing after it, with this
// whitespace policy: no whitespace anywhere except one optional space after
// each ':' and each ',' (the form of Python's json.dumps, `{"a": 1, "b": [1,
// 2]}`; Go's compact json.Marshal form is also accepted). Object properties
// appear in the schema's "properties" order; required ones always, optional
// ones may be left out. Strings are valid UTF-8; escapes are the JSON ones.
// Numbers have at most 16 digits before the point, 16 after it and 2 in
// the exponent (so they always fit a float64); integers have no fraction
// or exponent.
//
// # Schema subset
//
// Supported keywords: type (a name or a list, a list being an anyOf),
// properties, required, additionalProperties (only false; it is the default
// when properties are given; an object schema without properties is any
// JSON object), items, minItems, maxItems, minLength, maxLength, pattern (a
// simple ASCII regular expression, see below), enum, const, anyOf, oneOf,
// $ref to "#/$defs/..." or "#/definitions/..." (recursion is fine), $defs
// and definitions. anyOf alternatives may overlap: the automaton follows up
// to 4 parses at once (beyond that the newest are dropped, which keeps the
// output valid but loses some continuations); oneOf alternatives must
// differ in their first byte (so the output matches exactly one), except
// enum/const alternatives, which are merged. Annotations are ignored: title,
// description, $schema, $id, $comment, examples, default, deprecated,
// readOnly, writeOnly. Every other keyword (minimum, format, allOf,
// patternProperties, ...) is an error naming it (an *UnsupportedError),
// which the API returns as a 400.
//
// A schema without type, enum, const, anyOf or $ref is any JSON value;
// type is inferred from properties (object), items (array) or
// minLength/maxLength/pattern (string) when absent.
//
// Strings with minLength/maxLength count Unicode code points; they and
// pattern strings do not allow \u escapes (the other escapes are fine).
// pattern follows JSON Schema: a search, anchored only by a leading ^ and
// a trailing $; it supports literals, ., [...] classes, \d \w \s, groups,
// |, *, +, ?, {m,n} (m, n <= 64), (?i), and matches ASCII only (a
// non-ASCII character never matches). Combining pattern with maxLength can
// leave no way to finish the string; avoid it.
//
// # Speed
//
// The vocabulary is a byte trie walked in preorder with the automaton's
// state, skipping a subtree as soon as its prefix is rejected. Allowed sets
// are memoized per automaton state in the Grammar (shared by its
// sequences), so steady generation inside a string or between fields costs
// a map lookup and the copy of the allowed ids.
package constrain
