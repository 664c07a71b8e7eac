# docket — build, test, demo, install.
GO        ?= go
PREFIX    ?= $(HOME)/.local
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS   := -s -w -X main.version=$(VERSION)
BINARIES  := docket docket-ledger docket-gate docket-judge docket-hook

.PHONY: build test demo demo-openclaw install bench fuzz clean

build:
	@mkdir -p bin
	@for b in $(BINARIES); do \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/$$b ./cmd/$$b || exit 1; \
	done

test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

demo: build
	@./demo/run.sh

# The OpenClaw Code Review Memory example, narrated (installs OpenClaw from npm on first use).
demo-openclaw:
	@./examples/openclaw/demo.sh

install: build
	@mkdir -p $(PREFIX)/bin
	@for b in $(BINARIES); do install -m 0755 bin/$$b $(PREFIX)/bin/$$b; done
	$(PREFIX)/bin/docket init
	$(PREFIX)/bin/docket install --runtime claude --scope project

bench: build
	@./bench/run.sh

# Every fuzz target, FUZZTIME each (default 20s).
FUZZTIME ?= 20s
FUZZ := ./hooks:FuzzDetectAndDecode ./hooks:FuzzDecodeCodex ./hooks:FuzzDecodeGemini \
	./hooks:FuzzDecodeCursor ./ledger:FuzzParseEntry ./ledger:FuzzCheckInclusion ./ledger:FuzzDecodeLine \
	./gate:FuzzParseLine ./gate:FuzzBackScanner ./gate:FuzzExtract ./gate:FuzzGateStop \
	./judge:FuzzClassifyCommand ./policies:FuzzGlob ./policies:FuzzJudgesFrontMatter \
	./policies:FuzzParseTools ./validators:FuzzAnalyzeScript ./validators:FuzzParsePytestSummary \
	./install:FuzzParseDocument ./install:FuzzInstall ./server:FuzzParse \
	./adapters/eventcontract:FuzzParse

fuzz:
	@for t in $(FUZZ); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$pkg $$fn"; \
		$(GO) test -run=NONE -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	done

clean:
	rm -rf bin
