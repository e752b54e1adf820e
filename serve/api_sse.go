package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
)

// sse writes a Server-Sent Events stream as OpenAI sends it: each event is
// "data: {json}\n\n", the last is "data: [DONE]\n\n". It is safe for
// concurrent use; after a write fails (the client went away) it drops the
// rest.
type sse struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	f   http.Flusher
	err error
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &sse{w: w, f: f}
	s.flush()
	return s
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) raw(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	var b bytes.Buffer
	b.Grow(len(data) + 8)
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		s.err = err
		return
	}
	s.flush()
}

// send writes v as one event.
func (s *sse) send(v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		return
	}
	s.raw(bytes.TrimRight(b.Bytes(), "\n"))
}

// fail sends an error object (the stream has begun, so the status is 200).
func (s *sse) fail(err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = internalError(err)
	}
	s.send(ae.body())
}

func (s *sse) done() { s.raw([]byte("[DONE]")) }
