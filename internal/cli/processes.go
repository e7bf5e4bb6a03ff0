package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep"
	"github.com/lockstep-queue/lockstep/internal/cli/clienv"
)

// processOut is a registered process in `processes --json`.
type processOut struct {
	ID          string     `json:"id"`
	Host        string     `json:"host"`
	PID         int        `json:"pid"`
	Version     string     `json:"version"`
	Queues      string     `json:"queues"`
	Workers     int        `json:"workers"`
	StartedAt   *time.Time `json:"started_at"`
	HeartbeatAt *time.Time `json:"heartbeat_at"`
	// HeartbeatAgeMS is the heartbeat's age by the database's clock.
	HeartbeatAgeMS int64                 `json:"heartbeat_age_ms"`
	State          lockstep.ProcessState `json:"state"`
	// Running are the ids of the RUNNING jobs it claimed; a DEAD
	// process's are to be reaped.
	Running []int64 `json:"running"`
}

// processesOut is `processes --json`.
type processesOut struct {
	Processes []processOut `json:"processes"`
	// ReapAfter is the limit a process's heartbeat is DEAD past.
	ReapAfterMS int64 `json:"reap_after_ms"`
}

func newProcessesCmd(c *app) *cobra.Command {
	var asJSON bool
	var reapAfter time.Duration
	cmd := &cobra.Command{
		Use:   "processes",
		Short: "List the processes that run workers: host, pid, queues, heartbeat, LIVE or DEAD, and their running jobs",
		Long: `List the processes registered in the database — every started client
(lockstep work, lockstep serve, or a program using the library) — with
their host, pid, version, queues and workers, when they started, how old
their heartbeat is, and how many RUNNING jobs they claimed.

A process is DEAD when its heartbeat is older than --reap-after (give the
--reap-after the workers run with): it was killed or lost the database.
The reaper returns its RUNNING jobs to PENDING, so they are listed as to
be reaped. A process that stops cleanly removes its own row; a dead one's
row is deleted a day later (Config.ProcessRetention).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if reapAfter <= 0 {
				return fmt.Errorf("--reap-after must be positive, got %s", reapAfter)
			}
			return c.processes(cmd.Context(), reapAfter, asJSON)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&reapAfter, "reap-after", time.Minute, "a process whose heartbeat is older than this is DEAD (the workers' --reap-after)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

func (c *app) processes(ctx context.Context, reapAfter time.Duration, asJSON bool) error {
	d, err := c.OpenDriver(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	client, err := lockstep.NewClient(d, lockstep.Config{Logger: c.Logger, ReapAfter: reapAfter, HeartbeatInterval: reapAfter / 3,
		ProcessRetention: max(lockstep.DefaultProcessRetention, 2*reapAfter)})
	if err != nil {
		return err
	}
	ps, _, err := client.Processes(ctx)
	if err != nil {
		return err
	}
	out := processesOut{Processes: make([]processOut, 0, len(ps)), ReapAfterMS: reapAfter.Milliseconds()}
	for _, p := range ps {
		ids := make([]int64, 0, len(p.Running))
		for _, j := range p.Running {
			ids = append(ids, j.ID)
		}
		out.Processes = append(out.Processes, processOut{
			ID: p.ID, Host: p.Host, PID: p.PID, Version: p.Version, Queues: p.Queues, Workers: p.Workers,
			StartedAt: outTimePtr(p.StartedAt), HeartbeatAt: outTimePtr(p.HeartbeatAt),
			HeartbeatAgeMS: p.HeartbeatAge.Milliseconds(), State: p.State, Running: ids,
		})
	}
	if asJSON {
		return clienv.JSON(c.Stdout, out)
	}
	if len(ps) == 0 {
		_, err := fmt.Fprintln(c.Stdout, "no processes")
		return err
	}
	return writeProcessesTable(c.Stdout, ps)
}

// writeProcessesTable writes one row per process and, under a DEAD one,
// the RUNNING jobs it leaves to the reaper.
func writeProcessesTable(w io.Writer, ps []lockstep.Process) error {
	tw := clienv.Table(w)
	fmt.Fprintln(tw, "ID\tHOST\tPID\tVERSION\tQUEUES\tWORKERS\tSTARTED\tHEARTBEAT\tSTATE\tRUNNING")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s ago\t%s\t%d\n", outCell(p.ID, 60), outCell(p.Host, 40), p.PID,
			outCell(p.Version, 40), outCell(p.Queues, 40), p.Workers, outTime(p.StartedAt), outAge(p.HeartbeatAge), p.State, len(p.Running))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range ps {
		if p.State != lockstep.ProcessDead || len(p.Running) == 0 {
			continue
		}
		ids := make([]string, 0, len(p.Running))
		for _, j := range p.Running {
			ids = append(ids, strconv.FormatInt(j.ID, 10))
		}
		fmt.Fprintf(w, "%s is DEAD: its RUNNING jobs are to be reaped: %s\n", outSafe(p.ID, false), strings.Join(ids, ", "))
	}
	return nil
}
