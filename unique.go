package lockstep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lockstep-queue/lockstep/driver"
)

// UniqueOpts make an enqueue unique: the job is inserted only if no other
// job with the same unique key is in one of ByStatus; otherwise the
// existing job is returned, flagged as a duplicate (InsertResult). The
// database enforces it with a unique index, so two processes enqueueing at
// once cannot both win.
//
// The key is the kind plus the args (or Key), and optionally the queue and
// the period. A job holds its key only while its status is one of
// ByStatus: once it leaves them (a default unique job that finishes), the
// same key may be enqueued again.
type UniqueOpts struct {
	// Key, when set, replaces the args in the key: jobs of one kind with
	// the same Key are duplicates whatever their args.
	Key string
	// ByQueue adds the queue to the key.
	ByQueue bool
	// ByPeriod adds the period the job falls in to the key: the job's
	// scheduled time (or now) truncated to ByPeriod. With an hour, at most
	// one such job per clock hour.
	ByPeriod time.Duration
	// ByStatus are the statuses in which a job holds its key. Default
	// PENDING and RUNNING; both must be included (a job moves between them
	// on every claim and retry, and must not lose or regain its key
	// there). Add DONE for "at most once per key", FAILED to keep a failed
	// job's key until someone retries or retention deletes it.
	ByStatus []JobStatus
}

// uniqueKeyVersion is hashed into every key: a change to how keys are
// built changes the prefix, so an old and a new key never collide.
const uniqueKeyVersion = "lockstep/unique/v1"

// key returns the job's unique key (hex SHA-256) and its status set.
func (u *UniqueOpts) key(kind, queue string, args []byte, at time.Time) (string, int, error) {
	statuses := u.ByStatus
	if len(statuses) == 0 {
		statuses = []JobStatus{StatusPending, StatusRunning}
	}
	mask := 0
	for _, s := range statuses {
		bit := driver.UniqueStateBit(s)
		if bit == 0 {
			return "", 0, fmt.Errorf("unique: %q is not a job status", s)
		}
		mask |= bit
	}
	if !slices.Contains(statuses, StatusPending) || !slices.Contains(statuses, StatusRunning) {
		return "", 0, errors.New("unique: ByStatus must include PENDING and RUNNING")
	}
	if u.ByPeriod < 0 {
		return "", 0, fmt.Errorf("unique: ByPeriod must not be negative, got %s", u.ByPeriod)
	}
	h := sha256.New()
	part := func(name, v string) {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", name, len(v), v)
	}
	part("version", uniqueKeyVersion)
	part("kind", kind)
	if u.Key != "" {
		part("key", u.Key)
	} else {
		canon, err := canonicalJSON(args)
		if err != nil {
			return "", 0, fmt.Errorf("unique: %w", err)
		}
		part("args", string(canon))
	}
	if u.ByQueue {
		part("queue", queue)
	}
	if u.ByPeriod > 0 {
		if at.IsZero() {
			at = time.Now()
		}
		part("period", strconv.FormatInt(at.UTC().Truncate(u.ByPeriod).UnixNano(), 10))
	}
	return hex.EncodeToString(h.Sum(nil)), mask, nil
}

// canonicalJSON re-encodes JSON with sorted object keys and no spaces, so
// that args equal as JSON give one key whatever their formatting.
func canonicalJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	return json.Marshal(v)
}
