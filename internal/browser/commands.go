package browser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// elementKey is the W3C name of the member that carries an element reference.
const elementKey = "element-6066-11e4-a52e-4f735466cecf"

// empty is the body of POST commands without parameters: WebDriver requires
// a JSON object even then.
var empty = struct{}{}

// Element is a reference to a DOM element. It goes stale when the element
// leaves the document, e.g. after a navigation.
type Element struct {
	s    *Session
	id   string
	desc string // for error messages: the selector that found it
}

// MarshalJSON encodes e as a WebDriver element reference, so that an
// *Element passed to ExecuteScript arrives in the script as the DOM element.
func (e *Element) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{elementKey: e.id})
}

// Navigate loads url and waits until the page has loaded.
func (s *Session) Navigate(ctx context.Context, url string) error {
	if err := s.call(ctx, http.MethodPost, s.path("url"), map[string]string{"url": url}, nil); err != nil {
		return fmt.Errorf("browser: navigate to %s: %w", url, err)
	}
	return nil
}

// Find returns the first element matching the CSS selector. It does not
// wait for one to appear; a missing element is an *Error with Code
// "no such element". To wait, use WaitForText with an empty substring.
func (s *Session) Find(ctx context.Context, css string) (*Element, error) {
	var ref map[string]string
	if err := s.call(ctx, http.MethodPost, s.path("element"), locator(css), &ref); err != nil {
		return nil, fmt.Errorf("browser: find %s: %w", css, err)
	}
	if ref[elementKey] == "" {
		return nil, fmt.Errorf("browser: find %s: reply holds no element reference", css)
	}
	return &Element{s: s, id: ref[elementKey], desc: css}, nil
}

// FindAll returns every element matching the CSS selector, in document
// order; none is not an error.
func (s *Session) FindAll(ctx context.Context, css string) ([]*Element, error) {
	var refs []map[string]string
	if err := s.call(ctx, http.MethodPost, s.path("elements"), locator(css), &refs); err != nil {
		return nil, fmt.Errorf("browser: find all %s: %w", css, err)
	}
	els := make([]*Element, len(refs))
	for i, ref := range refs {
		if ref[elementKey] == "" {
			return nil, fmt.Errorf("browser: find all %s: reply holds no element reference", css)
		}
		els[i] = &Element{s: s, id: ref[elementKey], desc: css + "[" + strconv.Itoa(i) + "]"}
	}
	return els, nil
}

func locator(css string) map[string]string {
	return map[string]string{"using": "css selector", "value": css}
}

// Click scrolls e into view and clicks its centre, as a user would; it fails
// if another element would receive the click.
func (e *Element) Click(ctx context.Context) error {
	if err := e.s.call(ctx, http.MethodPost, e.path("click"), empty, nil); err != nil {
		return fmt.Errorf("browser: click %s: %w", e.desc, err)
	}
	return nil
}

// SendKeys focuses e and types text into it, appending to what it holds.
func (e *Element) SendKeys(ctx context.Context, text string) error {
	if err := e.s.call(ctx, http.MethodPost, e.path("value"), map[string]string{"text": text}, nil); err != nil {
		return fmt.Errorf("browser: type into %s: %w", e.desc, err)
	}
	return nil
}

// Text returns e's rendered text, as a user would see it.
func (e *Element) Text(ctx context.Context) (string, error) {
	var text string
	if err := e.s.call(ctx, http.MethodGet, e.path("text"), nil, &text); err != nil {
		return "", fmt.Errorf("browser: text of %s: %w", e.desc, err)
	}
	return text, nil
}

func (e *Element) path(cmd string) string {
	return e.s.path("element/" + e.id + "/" + cmd)
}

// PageSource returns the current DOM serialised as HTML, which reflects
// changes made by scripts since the page loaded.
func (s *Session) PageSource(ctx context.Context) (string, error) {
	var src string
	if err := s.call(ctx, http.MethodGet, s.path("source"), nil, &src); err != nil {
		return "", fmt.Errorf("browser: page source: %w", err)
	}
	return src, nil
}

// ExecuteScript runs script as the body of a function in the page, with
// args as its arguments array, and returns what it returns as JSON. An
// *Element argument arrives as the DOM element.
func (s *Session) ExecuteScript(ctx context.Context, script string, args ...any) (json.RawMessage, error) {
	if args == nil {
		args = []any{} // WebDriver rejects a null args
	}
	var result json.RawMessage
	body := map[string]any{"script": script, "args": args}
	if err := s.call(ctx, http.MethodPost, s.path("execute/sync"), body, &result); err != nil {
		return nil, fmt.Errorf("browser: execute script: %w", err)
	}
	return result, nil
}

// Screenshot saves a PNG of the viewport to path.
func (s *Session) Screenshot(ctx context.Context, path string) error {
	var b64 string
	if err := s.call(ctx, http.MethodGet, s.path("screenshot"), nil, &b64); err != nil {
		return fmt.Errorf("browser: screenshot: %w", err)
	}
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("browser: screenshot: decode: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("browser: screenshot: %w", err)
	}
	return nil
}

// AlertText returns the message of the open alert, confirm or prompt.
func (s *Session) AlertText(ctx context.Context) (string, error) {
	var text string
	if err := s.call(ctx, http.MethodGet, s.path("alert/text"), nil, &text); err != nil {
		return "", fmt.Errorf("browser: alert text: %w", err)
	}
	return text, nil
}

// AcceptAlert presses OK on the open alert, confirm or prompt.
func (s *Session) AcceptAlert(ctx context.Context) error {
	if err := s.call(ctx, http.MethodPost, s.path("alert/accept"), empty, nil); err != nil {
		return fmt.Errorf("browser: accept alert: %w", err)
	}
	return nil
}

// DismissAlert presses Cancel on the open confirm or prompt (OK on an alert).
func (s *Session) DismissAlert(ctx context.Context) error {
	if err := s.call(ctx, http.MethodPost, s.path("alert/dismiss"), empty, nil); err != nil {
		return fmt.Errorf("browser: dismiss alert: %w", err)
	}
	return nil
}

// textsScript returns the rendered text of every element matching
// arguments[0]. Reading them in one script, rather than Find then Text,
// cannot hit an element that a re-render replaced in between.
const textsScript = `
var els;
try { els = document.querySelectorAll(arguments[0]); }
catch (e) { return {invalid: String(e)}; }
return {texts: Array.from(els, function (el) { return el.innerText; })};`

// WaitForText polls the DOM until an element matching css contains
// substring in its rendered text ("" waits for the element to exist). When
// ctx ends first, the error wraps ctx's error and says what was last seen.
func (s *Session) WaitForText(ctx context.Context, css, substring string) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	seen := "nothing yet"
	for {
		var res struct {
			Invalid string   `json:"invalid"`
			Texts   []string `json:"texts"`
		}
		body := map[string]any{"script": textsScript, "args": []any{css}}
		err := s.call(ctx, http.MethodPost, s.path("execute/sync"), body, &res)
		switch {
		case err == nil && res.Invalid != "":
			return fmt.Errorf("browser: wait for %q in %s: invalid selector: %s", substring, css, res.Invalid)
		case err == nil:
			for _, t := range res.Texts {
				if strings.Contains(t, substring) {
					return nil
				}
			}
			seen = describeTexts(res.Texts)
		case ctx.Err() != nil:
			// The request was cut short; report the last real observation.
		case isPermanent(err):
			return fmt.Errorf("browser: wait for %q in %s: %w", substring, css, err)
		default:
			seen = "error: " + err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("browser: wait for %q in %s: %w; last saw %s", substring, css, ctx.Err(), seen)
		case <-tick.C:
		}
	}
}

// isPermanent reports whether err will not go away by polling again: the
// browser is gone, or a dialog blocks the page until the test handles it.
// Anything else, such as a script racing a navigation, is worth a retry.
func isPermanent(err error) bool {
	var we *Error
	if !errors.As(err, &we) {
		return true // chromedriver unreachable
	}
	switch we.Code {
	case "invalid session id", "no such window", "unexpected alert open", "invalid argument":
		return true
	}
	return false
}

func describeTexts(texts []string) string {
	if len(texts) == 0 {
		return "no matching element"
	}
	const maxShown = 5
	quoted := make([]string, 0, maxShown)
	for i, t := range texts {
		if i == maxShown {
			quoted = append(quoted, fmt.Sprintf("and %d more", len(texts)-maxShown))
			break
		}
		quoted = append(quoted, strconv.Quote(truncate(t, 200)))
	}
	return fmt.Sprintf("%d matching element(s): %s", len(texts), strings.Join(quoted, ", "))
}
