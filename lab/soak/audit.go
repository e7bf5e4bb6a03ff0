package soak

import (
	"context"
	"fmt"

	"github.com/lockstep-queue/lockstep/driver"
	"github.com/lockstep-queue/lockstep/internal/statusaudit"
)

// probeTable is where txIsolation commits rows to see whether an open
// transaction notices them.
const probeTable = "lockstep_soak_probe"

// transition is one audited status change (package statusaudit).
type transition = statusaudit.Transition

func probeDDL(dialect string) (create, drop string) {
	switch dialect {
	case "mysql":
		return "CREATE TABLE " + probeTable + " (id BIGINT NOT NULL PRIMARY KEY) ENGINE=InnoDB", "DROP TABLE IF EXISTS " + probeTable
	case "postgres":
		return "CREATE TABLE " + probeTable + " (id bigint PRIMARY KEY)", "DROP TABLE IF EXISTS " + probeTable
	}
	return "", "" // SQLite has one isolation; no probe
}

// installAudit installs the status audit and the isolation probe,
// replacing any left by an interrupted soak.
func installAudit(ctx context.Context, drv driver.Driver) error {
	if err := dropAudit(ctx, drv); err != nil {
		return err
	}
	if err := statusaudit.Install(ctx, drv); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if create, _ := probeDDL(drv.Dialect()); create != "" {
		if _, err := drv.DB().ExecContext(ctx, create); err != nil {
			return fmt.Errorf("soak: create probe table: %w", err)
		}
	}
	return nil
}

func dropAudit(ctx context.Context, drv driver.Driver) error {
	if err := statusaudit.Drop(ctx, drv); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	if _, drop := probeDDL(drv.Dialect()); drop != "" {
		if _, err := drv.DB().ExecContext(ctx, drop); err != nil {
			return fmt.Errorf("soak: drop probe table: %w", err)
		}
	}
	return nil
}

func readAudit(ctx context.Context, drv driver.Driver) (map[int64][]transition, int, error) {
	out, n, err := statusaudit.Read(ctx, drv)
	if err != nil {
		return nil, 0, fmt.Errorf("soak: %w", err)
	}
	return out, n, nil
}
