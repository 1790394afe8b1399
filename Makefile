# zerotal lock — build, test and run.
GO      ?= go
PKGS    := ./...
export GORACE := halt_on_error=1

.PHONY: all build bin/lockcluster test test-deps test-ts bench bench-peers bench-scale fuzz soak lint fmt run clean image

all: build

## build: compile every package, and the command into bin/lockcluster.
build: bin/lockcluster
	$(GO) build $(PKGS)

# Phony: go's own cache decides what to rebuild. -buildvcs=auto stamps the commit
# (lockcluster version) even where GOFLAGS turns it off.
bin/lockcluster:
	$(GO) build -buildvcs=auto -o bin/lockcluster ./cmd/lockcluster

## image: the container image of deploy/Containerfile from a static binary built here, with
## buildah and pulling nothing (docs/DEPLOY.md): bin/image/ gets the binary, busybox (Debian's
## busybox-static) and an empty data dir. IMAGE names it. As root in a container, run
## STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot make image. Not part of make test.
IMAGE ?= localhost/lockcluster:latest
image:
	@command -v buildah >/dev/null || { echo "image: needs buildah (apt-get install buildah)" >&2; exit 1; }
	@bb=$$(command -v busybox) && ! ldd "$$bb" >/dev/null 2>&1 || { echo "image: needs a static busybox (apt-get install busybox-static)" >&2; exit 1; }
	rm -rf bin/image && mkdir -p bin/image/data
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o bin/image/lockcluster ./cmd/lockcluster
	cp "$$(command -v busybox)" bin/image/busybox
	buildah bud --format docker -f deploy/Containerfile --build-arg FROM=prebuilt -t $(IMAGE) .

## test: every test, with the race detector (integration tests start real
## processes), the MySQL dialect of package fence (a nested module, against a
## MariaDB it starts), then the TypeScript client's; installs redis-server, node and
## npm first when they are missing. What tests keep (the live page's screenshots,
## integration/ui_test.go) lands in $(ARTIFACTS)/_artifacts/<n>/.
ARTIFACTS ?= $(CURDIR)/test-artifacts
test: test-deps
	@mkdir -p $(ARTIFACTS)
	$(GO) test -race -count=1 -timeout 20m -artifacts -outputdir $(ARTIFACTS) $(PKGS)
	cd fence/mysqltest && $(GO) test -race -count=1 ./...
	@$(MAKE) --no-print-directory test-ts

## test-ts: the TypeScript client (clients/ts): its devDependencies from the
## lockfile (npm ci), the build, and node --test against real lockcluster
## processes the tests start on free loopback ports.
test-ts: bin/lockcluster
	cd clients/ts && npm ci --prefer-offline --no-audit --no-fund && npm run build && npm test

## test-deps: install what the tests need beyond Go, when missing (apt-get).
test-deps:
	@./scripts/test-deps.sh

## bench: the side-by-side benchmarks (ratios against baselines in the same run).
bench:
	$(GO) test -run '^$$' -bench . -skip Scale -benchtime 200000x ./engine/
	$(GO) test -run '^$$' -bench BenchmarkManagerTry -benchtime 300000x -count 3 .
	ZEROTAL_BENCH_PHASE=3s $(GO) test -run '^$$' -bench . -skip Scale -benchtime 1x ./drivers/sqlite/
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./cluster/
	$(GO) test -run '^$$' -bench BenchmarkShared -benchtime 3x ./drivers/memory/ ./drivers/sqlite/ ./drivers/redis/ ./client/

## bench-scale: how the cost grows with the work held, outside make test (about 25 minutes):
## the engine's and each driver's figures at 1 k to 1 M held locks, waiters, a snapshot and an
## expiry storm; then three lockcluster agents beside three etcd members (bench/etcd -scale):
## held locks up to 1 M, memory per lock, the snapshot, a follower's restart, the leader's
## death, 100 k locks ending in one second. Installs etcd-server when missing. More flags of
## the cluster run in SCALE_ARGS, e.g. SCALE_ARGS='-scale-sizes 1000,100000'.
SCALE_ARGS ?=
bench-scale:
	@./scripts/test-deps.sh etcd:etcd-server
	$(GO) test -run '^$$' -bench Scale -benchtime 1x -timeout 30m ./engine/ ./drivers/memory/ ./drivers/sqlite/ ./drivers/redis/
	cd bench/etcd && $(GO) run . -scale $(SCALE_ARGS)

## bench-peers: against the peers, in nested modules so they never become dependencies:
## bsm/redislock on one redis-server, bare pg_try_advisory_lock on one postgres (and the
## driver through pgbouncer beside it), and etcd 3.4 (Debian's etcd-server) three members;
## installs redis-server and etcd-server first when missing (apt-get). Extra arguments
## of the etcd comparison go in ETCD_BENCH_ARGS, e.g.
## ETCD_BENCH_ARGS='-duration 5s -lockcluster-args "--raft-log wal"'.
ETCD_BENCH_ARGS ?=
bench-peers:
	@./scripts/test-deps.sh etcd:etcd-server
	cd bench/redislock && $(GO) test -run '^$$' -bench . -benchtime 10s -count 3
	cd bench/pglock && $(GO) test -run '^$$' -bench . -benchtime 2000x -count 1
	cd bench/etcd && $(GO) run . $(ETCD_BENCH_ARGS)

## fuzz: every fuzz target for FUZZTIME each, one after another (`make test` runs their seeds).
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./fsm:FuzzDecode ./fsm:FuzzDecodeLog ./fsm:FuzzEncode ./fsm:FuzzDecodeSnapshot ./fsm:FuzzRestore \
	./engine:FuzzDecodeSnapshot ./engine:FuzzRestore \
	./cluster/httpapi:FuzzAcquire ./cluster/httpapi:FuzzRelease ./cluster/httpapi:FuzzExtend \
	./cluster/httpapi:FuzzForceRelease ./cluster/httpapi:FuzzJoin ./cluster/httpapi:FuzzLeave \
	./cluster/httpapi:FuzzGetLock ./cluster/httpapi:FuzzListLocks \
	./cluster:FuzzNodeAcquire ./cluster:FuzzNodeLeave ./cluster:FuzzNodeGetLock \
	./cluster/raftstore:FuzzCheckBolt ./cluster/raftstore:FuzzCheckSegment ./api/stream:FuzzParseRequest
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg; \
	done

## soak: the long nemesis run (faults against three real nodes) for SOAK, then the
## retried-wait rounds (TestNemesis_RetriedWaits) for SOAK too; the report
## (markdown, JSON, history, node logs) goes to soak-report/. ZEROTAL_RAFT_LOG=wal
## or bolt (from the environment or `make soak ZEROTAL_RAFT_LOG=wal`) puts the
## nodes' raft log in that store (lockcluster agent --raft-log); unset: the default.
SOAK ?= 10m
ZEROTAL_RAFT_LOG ?=
soak:
	mkdir -p soak-report
	ZEROTAL_RAFT_LOG=$(ZEROTAL_RAFT_LOG) ZEROTAL_SOAK=$(SOAK) ZEROTAL_RETRIED_WAITS=$(SOAK) ZEROTAL_NEMESIS_REPORT_DIR=$(CURDIR)/soak-report \
		$(GO) test -race -count=1 -run '^(TestSoak|TestNemesis_RetriedWaits)$$' -timeout 0 -v ./integration/

## lint: check only (gofmt, go vet and staticcheck, at a pinned version from the
## module proxy); `make fmt` rewrites.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

fmt:
	gofmt -w .

## run: a local three-node cluster with a demo you can talk to (Ctrl-C stops it),
## from bin/lockcluster, which stays for the commands of the banner.
run: bin/lockcluster
	@echo 'In another terminal: export PATH="$(CURDIR)/bin:$$PATH" for the lockcluster commands below.'
	./bin/lockcluster dev --demo

clean:
	rm -rf bin soak-report
