package execjob

import (
	"strings"
	"unicode/utf8"
)

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max     int
	buf     []byte
	written int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.written += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	// Slide only once the buffer holds twice what it keeps, so that writes
	// cost O(1) amortised.
	if len(t.buf) >= 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// last returns at most the last n kept bytes, starting at a UTF-8
// character, as text a database can store (valid UTF-8, no NUL), and how
// many bytes were dropped before them.
func (t *tailBuffer) last(n int) (string, int64) {
	b := t.buf
	if over := len(b) - min(n, t.max); over > 0 {
		b = b[over:]
	}
	if int64(len(b)) < t.written {
		// Bytes were dropped before b, which may start inside a UTF-8
		// character: start at the next one.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", ""), t.written - int64(len(b))
}

// tail is last(n) trimmed of surrounding white space, for an error.
func (t *tailBuffer) tail(n int) (string, int64) {
	s, dropped := t.last(n)
	return strings.TrimSpace(s), dropped
}

// text is last(n) as an Output shows it, with the dropped bytes' marker;
// "" for a stream that is not kept or wrote nothing.
func (t *tailBuffer) text(n int) string {
	if t == nil || t.written == 0 {
		return ""
	}
	s, dropped := t.last(n)
	if dropped > 0 {
		s = droppedMarker(dropped) + s
	}
	return s
}
