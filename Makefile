# zerotal lock — build, test and run.
GO      ?= go
PKGS    := ./...
export GORACE := halt_on_error=1

.PHONY: all build test bench lint fmt run soak fuzz clean

all: build

build:
	$(GO) build $(PKGS)
	$(GO) build -o bin/lockcluster ./cmd/lockcluster

## test: every test, with the race detector (integration tests start real processes).
test:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## bench: the side-by-side benchmarks (ratios against baselines in the same run).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./engine/ ./drivers/memory/ .

## lint: check only (gofmt and go vet); `make fmt` rewrites.
lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fmt:
	gofmt -w .

## run: a local three-node cluster with a demo you can talk to (Ctrl-C stops it).
run:
	$(GO) run ./cmd/lockcluster dev --demo

clean:
	rm -rf bin
