package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/lockstep-queue/lockstep"
)

// queueMessages are the outcomes a queue action reports, by code in the
// redirect, so that no text from the request is reflected into the page.
var queueMessages = map[string]string{
	"paused":              "Queue paused: no process claims its jobs until it is resumed; running jobs finish.",
	"resumed":             "Queue resumed: its jobs are claimed again.",
	"max-workers-set":     "Max workers set: every process follows it within a second or so.",
	"max-workers-cleared": "Max workers cleared: each process runs as many as it is configured to.",
	limitsSet:             "Limits set: every process's claims follow them within a second or so; running jobs are not stopped.",
	limitsCleared:         "Limits removed: the queue's jobs run as the workers allow.",
}

// withSettings puts each queue's settings on its row, and adds a row for
// each queue that has settings but was not among those read (paused, say,
// before its first job).
func (s *Server) withSettings(ctx context.Context, t *queuesTable) error {
	list, err := s.reader.ListQueueSettings(ctx)
	if err != nil {
		return err
	}
	rows := make(map[string]int, len(t.Rows))
	for i, row := range t.Rows {
		rows[row.Queue] = i
	}
	for _, qs := range list {
		if i, ok := rows[qs.Queue]; ok {
			t.Rows[i].Settings = qs
			continue
		}
		// Below the MaxQueues cap every queue with jobs was read, so this
		// one has none; at the cap it may have jobs that were not read.
		unknown := t.MaxQueues > 0
		row := queueRow{Queue: qs.Queue, Oldest: "—", Scheduled: "—", Settings: qs}
		for _, status := range allStatuses {
			row.Cells = append(row.Cells, queueCell{Queue: qs.Queue, Status: strings.ToLower(string(status)), Class: statusClass(status), Unknown: unknown})
		}
		t.Rows = append(t.Rows, row)
	}
	return nil
}

func (s *Server) handlePauseQueue(w http.ResponseWriter, r *http.Request) {
	s.queueAction(w, r, "pause", func(ctx context.Context, queue string) (string, error) {
		return "paused", s.client.PauseQueue(ctx, queue)
	})
}

func (s *Server) handleResumeQueue(w http.ResponseWriter, r *http.Request) {
	s.queueAction(w, r, "resume", func(ctx context.Context, queue string) (string, error) {
		return "resumed", s.client.ResumeQueue(ctx, queue)
	})
}

// handleQueueMaxWorkers sets a queue's max workers; an empty field clears
// them, as 0 does.
func (s *Server) handleQueueMaxWorkers(w http.ResponseWriter, r *http.Request) {
	n := 0
	if v := strings.TrimSpace(r.PostForm.Get("max_workers")); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 || n > lockstep.MaxQueueWorkers {
			s.renderError(w, r, http.StatusBadRequest,
				"max workers must be a whole number from 0 (as configured) to "+strconv.Itoa(lockstep.MaxQueueWorkers))
			return
		}
	}
	s.queueAction(w, r, "set max workers of", func(ctx context.Context, queue string) (string, error) {
		outcome := "max-workers-set"
		if n == 0 {
			outcome = "max-workers-cleared"
		}
		return outcome, s.client.SetQueueMaxWorkers(ctx, queue, n)
	})
}

// queueAction changes the settings of the queue the form names and
// answers with the queues table (htmx) or a redirect to the queues page.
func (s *Server) queueAction(w http.ResponseWriter, r *http.Request, what string, act func(context.Context, string) (string, error)) {
	queue := r.PostForm.Get("queue")
	if queue == "" {
		s.renderError(w, r, http.StatusBadRequest, "no queue given")
		return
	}
	ctx, cancel := s.actionCtx(r)
	defer cancel()
	outcome, err := act(ctx, queue)
	switch {
	case errors.Is(err, lockstep.ErrInvalidQueueSetting):
		// A name the client refuses (too long, control characters).
		s.renderError(w, r, http.StatusBadRequest, redact(err.Error()))
		return
	case err != nil:
		s.dbError(w, r, what+" queue "+strconv.Quote(queue), err)
		return
	}
	s.logger.Info("dashboard: queue "+what, "queue", queue, "outcome", outcome, "remote", r.RemoteAddr)
	if !isHTMX(r) {
		http.Redirect(w, r, "/?done="+outcome, http.StatusSeeOther)
		return
	}
	// The change is made: a table that cannot be read now says so in
	// itself, rather than as a failed request.
	t, _ := s.queuesTable(r)
	t.Note = queueMessages[outcome]
	s.render(w, r, http.StatusOK, "partials.html", "queues-table", t)
}
