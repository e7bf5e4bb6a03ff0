package lockstep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The args types of FuzzDecodeArgs: what workers declare in practice.

type fuzzFlat struct {
	Name  string  `json:"name"`
	N     int     `json:"n"`
	Small int8    `json:"small"`
	U     uint16  `json:"u"`
	F     float64 `json:"f"`
	B     bool    `json:"b"`
	Count int64   `json:"count,string"`
	Skip  string  `json:"-"`
}

func (fuzzFlat) Kind() string { return "fuzz_flat" }

type fuzzInner struct {
	Label string   `json:"label"`
	Nums  []int    `json:"nums"`
	Next  *string  `json:"next,omitempty"`
	Score *float32 `json:"score"`
}

type fuzzEmbedded struct {
	Trace string `json:"trace"`
}

type fuzzNested struct {
	fuzzEmbedded
	Title string                `json:"title"`
	Inner fuzzInner             `json:"inner"`
	Items []fuzzInner           `json:"items"`
	Ptr   *fuzzInner            `json:"ptr"`
	Tags  map[string]int        `json:"tags"`
	ByID  map[int64][]string    `json:"by_id"`
	Grid  [][]uint8             `json:"grid"`
	Pair  [2]string             `json:"pair"`
	Any   any                   `json:"any"`
	Deep  map[string]*fuzzInner `json:"deep"` // not omitempty: it turns {} into nil
	Bytes []byte                `json:"bytes"`
}

func (fuzzNested) Kind() string { return "fuzz_nested" }

// fuzzTimed compares by encoding only: two decodings of one time carry
// different *time.Location values.
type fuzzTimed struct {
	At    time.Time       `json:"at"`
	Maybe *time.Time      `json:"maybe"`
	Raw   json.RawMessage `json:"raw,omitempty"`
}

func (fuzzTimed) Kind() string { return "fuzz_timed" }

// fuzzPanicky's UnmarshalJSON panics on the string "boom", as user code
// with a bug might; decoding must turn that into the job's error.
type fuzzPanicky struct{ V string }

func (p *fuzzPanicky) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &p.V); err != nil {
		return err
	}
	if p.V == "boom" {
		var m map[string]int
		m["boom"]++ // a nil map write: a runtime panic
	}
	return nil
}

func (p fuzzPanicky) MarshalJSON() ([]byte, error) { return json.Marshal(p.V) }

type fuzzCustom struct {
	P    fuzzPanicky   `json:"p"`
	List []fuzzPanicky `json:"list"`
}

func (fuzzCustom) Kind() string { return "fuzz_custom" }

// FuzzDecodeArgs feeds arbitrary bytes, as a claimed job's stored args, to
// the decoding path a worker runs (runWorker, then the worker entry's
// prepare) for typed workers and a raw worker, and to RawArgs on the way
// in. Nothing may panic; bytes that are not JSON are an error (a permanent
// one: the job fails at once); args that decode re-encode to JSON that
// decodes to the same value and the same encoding.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `""`, `0`, ``, ` `, `{`, `{"a":1,}`, "\xff", `{"name":"\xff"}`,
		`{"name":"Ada","n":42,"small":-128,"u":65535,"f":1.5e300,"b":true,"count":"9007199254740993"}`,
		`{"n":1e3}`, `{"n":9223372036854775808}`, `{"small":128}`, `{"f":1e400}`, `{"count":12}`, `{"count":"x"}`,
		`{"NAME":"case","name":"last"}`, `{"name":null,"n":null}`, `{"-":"skipped","Skip":"x"}`,
		`{"title":"t","trace":"emb","inner":{"label":"l","nums":[1,2,3],"next":"n","score":1.25},"items":[{"label":"a"},{}],"ptr":null,"tags":{"a":1},"by_id":{"7":["x"]},"grid":[[1,2],[]],"pair":["a","b"],"any":{"k":[1,"two",null,true,{"d":-0}]},"deep":{"x":null,"y":{"label":"y"}},"bytes":"aGVsbG8="}`,
		`{"by_id":{"nope":["x"]}}`, `{"bytes":"!!"}`, `{"pair":["a","b","c"]}`, `{"grid":[[256]]}`, `{"any":12345678901234567890}`,
		`{"items":null,"tags":null,"grid":[null]}`, `{"score":3.5e38}`, `{"inner":{"score":1e39}}`,
		`{"at":"2024-02-29T12:00:00.123456789+09:00","maybe":null,"raw":[1, 2, {"a" : "b"}]}`,
		`{"at":"9999-12-31T23:59:59Z"}`, `{"at":"0000-01-01T00:00:00+01:00"}`, `{"at":"2024-13-01T00:00:00Z"}`, `{"at":1}`,
		`{"p":"ok","list":["a","b"]}`, `{"p":"boom"}`, `{"list":["x","boom"]}`,
		"{\"name\":\"a\\u0000b\\ud800\"}", `{"name":"<script>&amp;"}`, `  {"n" : 1}  `, `{"n":1} {"n":2}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRaw(t, data)
		checkTyped[fuzzFlat](t, data, true)
		checkTyped[fuzzNested](t, data, true)
		checkTyped[fuzzTimed](t, data, false)
		checkTyped[fuzzCustom](t, data, true)
	})
}

// decodeRow runs a claimed row through runWorker as the producer does,
// with a worker that keeps the Job it is given.
func decodeRow[T JobArgs](t *testing.T, data []byte) (*Job[T], error) {
	t.Helper()
	ws := NewWorkers()
	var got *Job[T]
	if err := AddWorkerSafely(ws, WorkFunc(func(_ context.Context, j *Job[T]) error {
		got = j
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	var zero T
	c := &Client{cfg: Config{Workers: ws}}
	row := &JobRow{ID: 1, Queue: DefaultQueue, Kind: zero.Kind(), Args: data, Status: StatusRunning, Attempts: 1, MaxAttempts: 25}
	err, _ := c.runWorker(context.Background(), row)
	if err == nil && got == nil {
		t.Fatalf("%s: no error, but the worker did not run", zero.Kind())
	}
	return got, err
}

func checkTyped[T JobArgs](t *testing.T, data []byte, comparable bool) {
	t.Helper()
	var zero T
	kind := zero.Kind()
	job, err := decodeRow[T](t, data)
	if err != nil {
		var perm *PermanentError
		if !errors.As(err, &perm) {
			t.Fatalf("%s: args that do not decode must fail the job permanently, got %T: %v", kind, err, err)
		}
		if !strings.Contains(err.Error(), `decode args of kind "`+kind+`"`) {
			t.Fatalf("%s: error does not say what failed: %v", kind, err)
		}
		var pe *PanicError
		if errors.As(err, &pe) && !bytes.Contains(data, []byte("boom")) {
			t.Fatalf("%s: decoding panicked: %v", kind, err)
		}
		return
	}
	if !json.Valid(data) {
		t.Fatalf("%s: %q is not JSON, yet it decoded to %+v", kind, data, job.Args)
	}
	if job.ID != 1 || job.Kind != kind || !bytes.Equal(job.JobRow.Args, data) {
		t.Fatalf("%s: the worker got another row: %+v", kind, job.JobRow)
	}
	// Re-encode as an enqueue would, decode again: the same value, and the
	// same encoding.
	enc, err := json.Marshal(job.Args)
	if err != nil {
		t.Fatalf("%s: %q decoded to %+v, which does not encode: %v", kind, data, job.Args, err)
	}
	again, err := decodeRow[T](t, enc)
	if err != nil {
		t.Fatalf("%s: %q decoded and re-encoded to %q, which does not decode: %v", kind, data, enc, err)
	}
	enc2, err := json.Marshal(again.Args)
	if err != nil {
		t.Fatalf("%s: %q does not encode the second time: %v", kind, enc, err)
	}
	if !bytes.Equal(enc, enc2) {
		t.Fatalf("%s: %q: encodings differ:\n%s\n%s", kind, data, enc, enc2)
	}
	if comparable && !reflect.DeepEqual(job.Args, again.Args) {
		t.Fatalf("%s: %q: values differ after a round trip:\n%#v\n%#v", kind, data, job.Args, again.Args)
	}
}

// checkRaw: RawArgs refuses what is not JSON on the way in (whatever the
// kind and size checks say), and a raw worker gets the stored bytes
// unchanged.
func checkRaw(t *testing.T, data []byte) {
	t.Helper()
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{cfg: cfg}
	row, err := c.encodeJob(InsertManyParams{Args: RawArgs{KindName: "raw", JSON: data}})
	valid := json.Valid(data)
	switch {
	case !valid && err == nil:
		t.Fatalf("RawArgs %q is not JSON, yet it was accepted", data)
	case !valid && !strings.Contains(err.Error(), "not valid JSON"):
		t.Fatalf("RawArgs %q: the error does not say the JSON is invalid: %v", data, err)
	case valid && len(data) <= cfg.MaxArgsBytes && err != nil:
		t.Fatalf("RawArgs %q is JSON, yet refused: %v", data, err)
	case valid && err == nil:
		// json.Marshal compacts a Marshaler's output and escapes <, >, &,
		// U+2028 and U+2029 in it.
		var compact, want bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatal(err)
		}
		json.HTMLEscape(&want, compact.Bytes())
		if !bytes.Equal(row.Args, want.Bytes()) {
			t.Fatalf("RawArgs %q stored as %q, not its compact form %q", data, row.Args, want.Bytes())
		}
	}

	ws := NewWorkers()
	var got *Job[RawArgs]
	if err := AddRawWorker(ws, "raw", WorkFunc(func(_ context.Context, j *Job[RawArgs]) error {
		got = j
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	rc := &Client{cfg: Config{Workers: ws}}
	werr, _ := rc.runWorker(context.Background(), &JobRow{ID: 2, Kind: "raw", Args: data, Attempts: 1, MaxAttempts: 1})
	if werr != nil {
		t.Fatalf("a raw worker never fails to decode, got %v", werr)
	}
	if got == nil || got.Args.KindName != "raw" || !bytes.Equal(got.Args.JSON, data) {
		t.Fatalf("a raw worker must get the stored bytes as they are: %+v", got)
	}
}

// A panic in an args type's UnmarshalJSON fails the job permanently with
// a *PanicError; it does not take the process down.
func TestDecodePanicIsAPermanentError(t *testing.T) {
	_, err := decodeRow[fuzzCustom](t, []byte(`{"p":"boom"}`))
	var perm *PermanentError
	var pe *PanicError
	if !errors.As(err, &perm) || !errors.As(err, &pe) {
		t.Fatalf("want a permanent error wrapping a *PanicError, got %T: %v", err, err)
	}
	if !strings.Contains(err.Error(), `decode args of kind "fuzz_custom": panic: assignment to entry in nil map`) {
		t.Fatalf("the error should say where it panicked: %v", err)
	}
}
