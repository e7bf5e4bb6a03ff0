package dashboard

import (
	"net/http"
	"time"

	"github.com/lockstep-queue/lockstep"
)

// ---- processes ----

// processRow is a registered process as the processes page shows it.
type processRow struct {
	lockstep.Process
	// Age is the heartbeat's age by the database's clock ("1.2s").
	Age  string
	Dead bool
	// Jobs are its RUNNING jobs; a DEAD process's are to be reaped.
	Jobs []jobRow
}

type processesData struct {
	base
	Procs processList
}

// processList is the part of the page the 5-second refresh replaces.
type processList struct {
	Rows      []processRow
	Live      int
	Dead      int
	ReapAfter time.Duration
}

func (s *Server) handleProcesses(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ps, _, err := s.reader.Processes(ctx)
	if err != nil {
		s.dbError(w, r, "list processes", err)
		return
	}
	b := s.base(r, "Processes", "processes")
	list := processList{Rows: make([]processRow, 0, len(ps)), ReapAfter: s.client.ReapAfter()}
	for _, p := range ps {
		row := processRow{Process: p, Age: fmtDur(max(p.HeartbeatAge, 0)), Dead: p.State == lockstep.ProcessDead}
		for _, j := range p.Running {
			row.Jobs = append(row.Jobs, newJobRow(j, b.CSRF, "/processes"))
		}
		if row.Dead {
			list.Dead++
		} else {
			list.Live++
		}
		list.Rows = append(list.Rows, row)
	}
	s.render(w, r, http.StatusOK, "processes.html", "layout", processesData{base: b, Procs: list})
}
