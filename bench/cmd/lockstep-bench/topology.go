package main

import (
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-queue/lockstep/bench/internal/topology"
)

func newTopologyCmd(r *root) *cobra.Command {
	cfg := topology.DefaultConfig()
	topologies := strings.Join(cfg.Topologies, ",")
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Throughput on one server against a Galera cluster (one writer, three) and a PostgreSQL primary with a standby (sync, async)",
		Long: `topology measures the deployments docs/scaling.md compares. Each run is a
burn-down of --jobs no-op jobs inserted before --clients clients (each its
own connection pool) with --workers workers each start, timed from the
first Start to the last DONE, on a fresh database:

  mariadb         one MariaDB server
  galera-1        a three-node MariaDB Galera cluster, every client on a DSN
                  naming the three nodes (all write through the first)
  galera-3        the same cluster, client i through node i (three writers:
                  claims of the same rows conflict at certification and are
                  retried)
  postgres        one PostgreSQL server
  postgres-sync   a primary and a streaming standby, synchronous
                  (synchronous_standby_names): a commit waits for the standby
  postgres-async  a primary and an asynchronous standby

Every server runs with durable settings. The table shows each run, the
medians, their ratio to the single server of the same kind, and the units of
work retried after a deadlock or a certification conflict.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg.Topologies = splitList(topologies)
			set, err := r.Servers(ctx)
			if err != nil {
				return err
			}
			cfg.Logger = r.Logger()
			cfg.ClientLogger = slog.New(levelFilter{r.Logger().With("from", "queue").Handler(), slog.LevelError})
			rep, err := topology.Run(ctx, set, cfg)
			if rep != nil && len(rep.Runs) > 0 && err != nil {
				_ = rep.WriteText(r.stderr)
			}
			if err != nil {
				return err
			}
			if r.JSON() {
				return r.writeJSON(rep)
			}
			return rep.WriteText(r.stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&topologies, "topologies", topologies, "comma-separated topologies: "+strings.Join(topology.All, ","))
	f.IntVar(&cfg.Reps, "reps", cfg.Reps, "repetitions of each topology")
	f.IntVar(&cfg.Jobs, "jobs", cfg.Jobs, "jobs of each burn-down")
	f.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients, each its own pool (galera-3 needs at least 3)")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "workers of each client")
	return cmd
}
