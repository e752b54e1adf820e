package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is an error with the HTTP status and the fields of OpenAI's
// error object: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string
	Code    string
}

func (e *apiError) Error() string { return e.Message }

// errorBody is the JSON shape of an OpenAI error response.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	o := errorObject{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		p := e.Param
		o.Param = &p
	}
	if e.Code != "" {
		c := e.Code
		o.Code = &c
	}
	return errorBody{Error: o}
}

// badRequest is a 400 naming the offending field.
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...),
		Type: "invalid_request_error", Param: param}
}

func notFound(code, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...),
		Type: "invalid_request_error", Code: code}
}

func methodNotAllowed(method, path string) *apiError {
	return &apiError{Status: http.StatusMethodNotAllowed, Message: fmt.Sprintf("method %s is not allowed on %s", method, path),
		Type: "invalid_request_error", Code: "method_not_allowed"}
}

func unauthorized() *apiError {
	return &apiError{Status: http.StatusUnauthorized, Message: "invalid or missing API key (send Authorization: Bearer KEY)",
		Type: "invalid_request_error", Code: "invalid_api_key"}
}

func tooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", limit),
		Type: "invalid_request_error", Code: "request_too_large"}
}

func queueFull() *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Message: "the server's request queue is full; retry later",
		Type: "rate_limit_error", Code: "queue_full"}
}

func draining() *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Message: "the server is shutting down",
		Type: "server_error", Code: "shutting_down"}
}

// clientGone is the status logged when the client disconnected before the
// answer (nginx's 499); the client never sees it.
func clientGone() *apiError {
	return &apiError{Status: 499, Message: "the client closed the request", Type: "invalid_request_error", Code: "client_closed_request"}
}

func internalError(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error"}
}

// submitError maps an error of Generator.Submit to its HTTP error.
func submitError(err error) *apiError {
	switch {
	case errors.Is(err, ErrQueueFull):
		return queueFull()
	case errors.Is(err, ErrDraining):
		return draining()
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return internalError(fmt.Errorf("submit: %w", err))
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes err as an OpenAI error object; errors that are not
// *apiError are internal (500).
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = internalError(err)
	}
	writeJSON(w, ae.Status, ae.body())
}
