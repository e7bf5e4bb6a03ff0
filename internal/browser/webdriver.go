package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Error is a failure reported by chromedriver. Code is the W3C WebDriver
// error code ("no such element", "unexpected alert open", ...), so that
// callers can tell a missing element from a dead browser with errors.As.
type Error struct {
	HTTPStatus int
	Code       string
	Message    string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// call sends one WebDriver command and decodes the "value" member of the
// reply into out, if out is not nil.
func (s *Session) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var reply struct {
		Value json.RawMessage `json:"value"`
	}
	decodeErr := json.Unmarshal(data, &reply)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if decodeErr == nil && json.Unmarshal(reply.Value, &e) == nil && e.Error != "" {
			return &Error{HTTPStatus: resp.StatusCode, Code: e.Error, Message: strings.TrimSpace(e.Message)}
		}
		return &Error{HTTPStatus: resp.StatusCode, Code: "unknown error",
			Message: fmt.Sprintf("HTTP %s: %s", resp.Status, truncate(string(data), 500))}
	}
	if decodeErr != nil {
		return fmt.Errorf("decode reply to %s %s: %w", method, path, decodeErr)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Value, out); err != nil {
		return fmt.Errorf("decode reply to %s %s: %w", method, path, err)
	}
	return nil
}

// path returns the URL path of a command on this session; suffix is empty
// or starts without a slash.
func (s *Session) path(suffix string) string {
	if suffix == "" {
		return "/session/" + s.id
	}
	return "/session/" + s.id + "/" + suffix
}

// truncate keeps error messages readable when a reply is a whole HTML page
// or an element holds a novel.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
