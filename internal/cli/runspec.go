package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lockstep-queue/lockstep"
)

// A run spec is the JSON file `runs create --spec` reads: a run, its jobs
// with their dependencies by key, and its callbacks. It is parsed field by
// field, so that a mistake is reported with the field's path in the
// spec's own words (jobs[2] ("load").depends_on[0]) rather than as a Go
// type, and checked whole — keys, dependencies, cycles — before anything
// is written.

// runSpec is a parsed, checked spec.
type runSpec struct {
	Name      string
	Metadata  json.RawMessage
	Policy    lockstep.DependencyPolicy
	Jobs      []specJob
	Callbacks []specCallback
}

type specJob struct {
	Key         string
	Kind        string
	Args        json.RawMessage
	Queue       string
	Priority    int
	MaxAttempts int
	DependsOn   []string
	Policy      lockstep.DependencyPolicy
	Metadata    json.RawMessage
	LimitKey    string
}

type specCallback struct {
	On          lockstep.CallbackOn
	Kind        string
	Args        json.RawMessage
	Queue       string
	Priority    int
	MaxAttempts int
}

// The fields each level of a spec knows, in the order the errors list them.
var (
	specTopFields      = []string{"name", "metadata", "on_dependency_failure", "jobs", "callbacks"}
	specJobFields      = []string{"key", "kind", "args", "queue", "priority", "max_attempts", "depends_on", "on_dependency_failure", "metadata", "limit_key"}
	specCallbackFields = []string{"on", "kind", "args", "queue", "priority", "max_attempts"}
)

// specError is a mistake in a spec, prefixed with where the spec came
// from.
func specError(from, format string, a ...any) error {
	return fmt.Errorf("run spec %s: %s", from, fmt.Sprintf(format, a...))
}

// parseRunSpec parses and checks a spec; from names it in errors (a file
// name, or "standard input").
func parseRunSpec(data []byte, from string) (*runSpec, error) {
	if err := checkSpecSyntax(data, from); err != nil {
		return nil, err
	}
	top, err := specObject(data, "the spec", specTopFields)
	if err != nil {
		return nil, specError(from, "%s", err)
	}
	s := &runSpec{}
	p := specParser{}
	s.Name = p.str(top, "name", "name")
	s.Metadata = p.json(top, "metadata")
	s.Policy = p.policy(top, "on_dependency_failure", "on_dependency_failure")
	if p.err != nil {
		return nil, specError(from, "%s", p.err)
	}
	switch {
	case strings.TrimSpace(s.Name) == "":
		return nil, specError(from, `"name" is required: the run's name, e.g. "name": "nightly-import"`)
	case len(s.Name) > 255:
		return nil, specError(from, `"name" is %d bytes long; a run's name is at most 255`, len(s.Name))
	}
	rawJobs, err := specArray(top, "jobs", "jobs")
	if err != nil {
		return nil, specError(from, "%s", err)
	}
	if len(rawJobs) == 0 {
		return nil, specError(from, `"jobs" is required and must list at least one job, e.g. "jobs": [{"key": "extract", "kind": "extract"}]`)
	}
	for i, raw := range rawJobs {
		j, err := parseSpecJob(raw, i)
		if err != nil {
			return nil, specError(from, "%s", err)
		}
		s.Jobs = append(s.Jobs, j)
	}
	rawCallbacks, err := specArray(top, "callbacks", "callbacks")
	if err != nil {
		return nil, specError(from, "%s", err)
	}
	for i, raw := range rawCallbacks {
		cb, err := parseSpecCallback(raw, i)
		if err != nil {
			return nil, specError(from, "%s", err)
		}
		s.Callbacks = append(s.Callbacks, cb)
	}
	if err := s.checkGraph(); err != nil {
		return nil, specError(from, "%s", err)
	}
	return s, nil
}

// checkSpecSyntax reports a spec that is not one JSON value, with the
// line and column of the mistake.
func checkSpecSyntax(data []byte, from string) error {
	if !utf8.Valid(data) {
		return specError(from, "is not UTF-8 text")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return specError(from, "is empty; it must be a JSON object such as {\"name\": \"nightly\", \"jobs\": [{\"kind\": \"report\"}]}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		return specError(from, "line %d, column %d: not valid JSON: %s", line, col, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, int64(len(data)))
		return specError(from, "line %d, column %d: the JSON ends early (an object, array or string is not closed)", line, col)
	case err != nil:
		return specError(from, "not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		line, col := lineCol(data, dec.InputOffset())
		return specError(from, "line %d, column %d: more JSON after the spec's object; a spec is one object", line, col)
	}
	return nil
}

// lineCol turns a byte offset into a 1-based line and column (in runes).
// A syntax error's offset is just past the byte that was wrong.
func lineCol(data []byte, offset int64) (int, int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, max(1, utf8.RuneCount(before[start:]))
}

// specObject decodes raw as an object whose fields are among known.
func specObject(raw json.RawMessage, what string, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s must be a JSON object {…}, got %s", what, shortJSON(raw))
	}
	var unknown []string
	for k := range m {
		if !contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s has an unknown field %q (known fields: %s)", what, unknown[0], strings.Join(known, ", "))
	}
	return m, nil
}

// specArray reads an optional array field.
func specArray(m map[string]json.RawMessage, field, path string) ([]json.RawMessage, error) {
	raw, ok := m[field]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s must be a JSON array […], got %s", path, shortJSON(raw))
	}
	return out, nil
}

// shortJSON quotes a JSON value for an error message, cut to 40 runes.
func shortJSON(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return outSafe(s, false)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// specParser reads typed fields, keeping the first mistake.
type specParser struct{ err error }

func (p *specParser) fail(format string, a ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, a...)
	}
}

func (p *specParser) str(m map[string]json.RawMessage, field, path string) string {
	raw, ok := m[field]
	if !ok || p.err != nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail("%s must be a string, got %s", path, shortJSON(raw))
	}
	return s
}

// nonEmpty reads a string that, when present, must not be blank.
func (p *specParser) nonEmpty(m map[string]json.RawMessage, field, path string) string {
	s := p.str(m, field, path)
	if _, ok := m[field]; ok && p.err == nil && strings.TrimSpace(s) == "" {
		p.fail("%s must not be empty", path)
	}
	return s
}

func (p *specParser) integer(m map[string]json.RawMessage, field, path string, lo, hi int) int {
	raw, ok := m[field]
	if !ok || p.err != nil {
		return 0
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		n, _ = v.(json.Number)
	}
	i, err := n.Int64()
	switch {
	case n == "" || err != nil:
		p.fail("%s must be a whole number, got %s", path, shortJSON(raw))
	case i < int64(lo) || i > int64(hi):
		p.fail("%s must be from %d to %d, got %d", path, lo, hi, i)
	}
	return int(i)
}

// json reads any JSON value, kept as written.
func (p *specParser) json(m map[string]json.RawMessage, field string) json.RawMessage {
	raw, ok := m[field]
	if !ok {
		return nil
	}
	return raw
}

func (p *specParser) policy(m map[string]json.RawMessage, field, path string) lockstep.DependencyPolicy {
	s := p.str(m, field, path)
	if _, ok := m[field]; !ok || p.err != nil {
		return lockstep.DependencyDefault
	}
	switch s {
	case "cancel":
		return lockstep.CancelOnDependencyFailure
	case "run":
		return lockstep.RunOnDependencyFailure
	}
	p.fail(`%s must be "cancel" (cancel the job when a dependency FAILED or was CANCELLED, the default) or "run" (run it anyway), got %q`, path, s)
	return lockstep.DependencyDefault
}

func (p *specParser) keys(m map[string]json.RawMessage, field, path string) []string {
	raw, ok := m[field]
	if !ok || p.err != nil || string(raw) == "null" {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		p.fail("%s must be an array of job keys, e.g. [\"extract\"], got %s", path, shortJSON(raw))
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			p.fail("%s[%d] must be a job's key (a string), got %s", path, i, shortJSON(it))
			return nil
		}
		out = append(out, s)
	}
	return out
}

// maxPriority bounds a spec's priorities to what InsertOpts takes.
const maxPriority = 1<<31 - 1

func parseSpecJob(raw json.RawMessage, i int) (specJob, error) {
	path := fmt.Sprintf("jobs[%d]", i)
	m, err := specObject(raw, path, specJobFields)
	if err != nil {
		return specJob{}, err
	}
	p := specParser{}
	j := specJob{Key: p.nonEmpty(m, "key", path+".key")}
	if j.Key != "" {
		path = fmt.Sprintf("jobs[%d] (%q)", i, j.Key)
	}
	j.Kind = p.nonEmpty(m, "kind", path+".kind")
	j.Args = p.json(m, "args")
	j.Queue = p.nonEmpty(m, "queue", path+".queue")
	j.Priority = p.integer(m, "priority", path+".priority", -maxPriority, maxPriority)
	j.MaxAttempts = p.integer(m, "max_attempts", path+".max_attempts", 1, maxPriority)
	j.DependsOn = p.keys(m, "depends_on", path+".depends_on")
	j.Policy = p.policy(m, "on_dependency_failure", path+".on_dependency_failure")
	j.Metadata = p.json(m, "metadata")
	j.LimitKey = p.nonEmpty(m, "limit_key", path+".limit_key")
	if p.err == nil && j.Kind == "" {
		p.fail(`%s needs a "kind": the kind of job its worker runs`, path)
	}
	return j, p.err
}

func parseSpecCallback(raw json.RawMessage, i int) (specCallback, error) {
	path := fmt.Sprintf("callbacks[%d]", i)
	m, err := specObject(raw, path, specCallbackFields)
	if err != nil {
		return specCallback{}, err
	}
	p := specParser{}
	cb := specCallback{On: lockstep.CallbackOn(p.str(m, "on", path+".on"))}
	cb.Kind = p.nonEmpty(m, "kind", path+".kind")
	cb.Args = p.json(m, "args")
	cb.Queue = p.nonEmpty(m, "queue", path+".queue")
	cb.Priority = p.integer(m, "priority", path+".priority", -maxPriority, maxPriority)
	cb.MaxAttempts = p.integer(m, "max_attempts", path+".max_attempts", 1, maxPriority)
	if p.err != nil {
		return cb, p.err
	}
	switch cb.On {
	case lockstep.CallbackOnSuccess, lockstep.CallbackOnFailure, lockstep.CallbackOnComplete:
	case "":
		return cb, fmt.Errorf(`%s needs "on": "success", "failure" or "complete"`, path)
	default:
		return cb, fmt.Errorf(`%s.on must be "success" (every job DONE), "failure" (a job FAILED) or "complete" (every job ended), got %q`, path, cb.On)
	}
	if cb.Kind == "" {
		return cb, fmt.Errorf(`%s needs a "kind": the kind of job the callback is`, path)
	}
	return cb, nil
}

// checkGraph checks the dependencies: unique keys, keys that name a job of
// the spec, no job depending on itself, no cycle.
func (s *runSpec) checkGraph() error {
	at := map[string]int{}
	for i, j := range s.Jobs {
		if j.Key == "" {
			continue
		}
		if first, dup := at[j.Key]; dup {
			return fmt.Errorf("jobs[%d] and jobs[%d] have the same key %q; keys must be unique within a run", first, i, j.Key)
		}
		at[j.Key] = i
	}
	deps := make([][]int, len(s.Jobs))
	for i, j := range s.Jobs {
		for n, k := range j.DependsOn {
			d, ok := at[k]
			switch {
			case !ok:
				return fmt.Errorf("%s.depends_on[%d] is %q, which is no job's key in this spec%s", s.jobPath(i), n, k, s.didYouMean(k))
			case d == i:
				return fmt.Errorf("%s depends on itself", s.jobPath(i))
			}
			deps[i] = append(deps[i], d)
		}
		if j.Policy != lockstep.DependencyDefault && len(j.DependsOn) == 0 {
			return fmt.Errorf("%s.on_dependency_failure is set but the job has no depends_on", s.jobPath(i))
		}
	}
	if c := findCycle(deps); c != nil {
		names := make([]string, len(c))
		for n, i := range c {
			names[n] = fmt.Sprintf("%q", s.Jobs[i].Key)
		}
		return fmt.Errorf("the jobs' dependencies form a cycle, so none of them could ever start: %s (each depends on the next)", strings.Join(names, " → "))
	}
	return nil
}

func (s *runSpec) jobPath(i int) string {
	if k := s.Jobs[i].Key; k != "" {
		return fmt.Sprintf("jobs[%d] (%q)", i, k)
	}
	return fmt.Sprintf("jobs[%d]", i)
}

// didYouMean suggests a key that differs from k only in case or spacing.
func (s *runSpec) didYouMean(k string) string {
	norm := func(x string) string { return strings.ToLower(strings.TrimSpace(x)) }
	for _, j := range s.Jobs {
		if j.Key != "" && norm(j.Key) == norm(k) {
			return fmt.Sprintf(" (did you mean %q?)", j.Key)
		}
	}
	return ""
}

// findCycle returns one cycle of the graph (i depends on deps[i]) as a
// path that starts and ends at the same job, or nil.
func findCycle(deps [][]int) []int {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(deps))
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		state[i] = onPath
		path = append(path, i)
		for _, d := range deps[i] {
			switch state[d] {
			case onPath:
				start := 0
				for n, x := range path {
					if x == d {
						start = n
					}
				}
				return append(append([]int{}, path[start:]...), d)
			case unseen:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range deps {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// params turns the spec into InsertRun's arguments.
func (s *runSpec) params() ([]lockstep.InsertManyParams, *lockstep.RunOpts) {
	opts := &lockstep.RunOpts{OnDependencyFailure: s.Policy}
	if len(s.Metadata) > 0 {
		opts.Metadata = s.Metadata
	}
	jobs := make([]lockstep.InsertManyParams, len(s.Jobs))
	for i, j := range s.Jobs {
		o := &lockstep.InsertOpts{Queue: j.Queue, Priority: j.Priority, MaxAttempts: j.MaxAttempts, LimitKey: j.LimitKey}
		if len(j.Metadata) > 0 {
			o.Metadata = j.Metadata
		}
		jobs[i] = lockstep.InsertManyParams{
			Args: lockstep.RawArgs{KindName: j.Kind, JSON: argsOrEmpty(j.Args)}, Opts: o,
			Key: j.Key, DependsOn: j.DependsOn, OnDependencyFailure: j.Policy,
		}
	}
	for _, cb := range s.Callbacks {
		opts.Callbacks = append(opts.Callbacks, lockstep.RunCallback{
			On:   cb.On,
			Args: lockstep.RawArgs{KindName: cb.Kind, JSON: argsOrEmpty(cb.Args)},
			Opts: &lockstep.InsertOpts{Queue: cb.Queue, Priority: cb.Priority, MaxAttempts: cb.MaxAttempts},
		})
	}
	return jobs, opts
}

// argsOrEmpty is a job's args, {} when the spec gives none.
func argsOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// callbackWhen says when a callback fires, for people.
func callbackWhen(on string) string {
	switch lockstep.CallbackOn(on) {
	case lockstep.CallbackOnSuccess:
		return "when every job of the run is DONE"
	case lockstep.CallbackOnFailure:
		return "when a job of the run FAILED"
	case lockstep.CallbackOnComplete:
		return "when every job of the run has ended"
	}
	return "on " + on
}
