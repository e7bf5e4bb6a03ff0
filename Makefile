GO ?= go
# apt-get needs root; CI containers usually run as root and have no sudo.
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps vet test demo bench-dashboard

# internal/testdb starts throwaway MariaDB and PostgreSQL servers from these
# binaries; it never uses a system service, so only the packages are needed.
# internal/browser drives Debian's chromium through chromium-driver; its tests
# fail, not skip, without them. apt-get update runs only if something is missing.
deps:
	@have_my=; have_pg=; pkgs=; \
	{ command -v mariadbd || [ -x /usr/sbin/mariadbd ]; } >/dev/null 2>&1 && \
	  { command -v mariadb-install-db || [ -x /usr/bin/mariadb-install-db ]; } >/dev/null 2>&1 && have_my=1; \
	{ command -v initdb && command -v pg_ctl; } >/dev/null 2>&1 && have_pg=1; \
	for d in /usr/lib/postgresql/*/bin; do \
	  [ -x "$$d/initdb" ] && [ -x "$$d/pg_ctl" ] && have_pg=1; \
	done; \
	if [ -z "$$have_my" ] || [ -z "$$have_pg" ]; then \
	  pkgs="mariadb-server postgresql"; \
	fi; \
	if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  pkgs="$$pkgs chromium chromium-driver"; \
	fi; \
	if [ -n "$$pkgs" ]; then \
	  echo "installing" $$pkgs; \
	  $(SUDO) apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkgs; \
	fi

vet:
	$(GO) vet ./...

test: deps
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
	  echo "gofmt -l reports unformatted files:"; echo "$$unformatted"; exit 1; \
	fi
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

demo:
	$(GO) run ./cmd/lockstep demo

# Each dashboard page against 1,000,000 jobs on throwaway MariaDB and
# PostgreSQL servers (docs/operate.md has the numbers).
bench-dashboard: deps
	$(GO) test -run '^$$' -bench BenchmarkPages -benchtime 20x ./dashboard/
