# docket — build, test, demo, install.
GO        ?= go
PREFIX    ?= $(HOME)/.local
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BINARIES  := docket docket-ledger docket-gate docket-judge

.PHONY: build test demo install bench fuzz clean

build:
	@mkdir -p bin
	@for b in $(BINARIES); do \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/$$b ./cmd/$$b || exit 1; \
	done

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

demo: build
	@./demo/run.sh

install: build
	@mkdir -p $(PREFIX)/bin
	@for b in $(BINARIES); do install -m 0755 bin/$$b $(PREFIX)/bin/$$b; done
	$(PREFIX)/bin/docket init
	$(PREFIX)/bin/docket install --runtime claude --scope project

bench: build
	@./bench/run.sh

fuzz:
	$(GO) test -run=NONE -fuzz=FuzzDecodeClaude -fuzztime=30s ./hooks
	$(GO) test -run=NONE -fuzz=FuzzParseEntry -fuzztime=30s ./ledger

clean:
	rm -rf bin
