package caps

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// The firewall is one nftables table, footprint.TableFamily footprint.TableName, replaced whole by one
// `nft -f -` transaction and read back with `nft list table`. nft lists a table in its own normal form
// (it merges and sorts sets, drops the braces of a set of one), so what the node compares is not our
// rendering with nft's listing but nft's listing now with nft's listing just after the last apply,
// which the node records beside the sha256 of the table that apply rendered.

// nftListing lists Lexicon's table, or answers present false when there is none.
func nftListing(ctx context.Context) (string, bool, error) {
	tables, err := runTool(ctx, "nft", nil, "list", "tables", footprint.TableFamily)
	if err != nil {
		return "", false, err
	}
	present := false
	for line := range strings.SplitSeq(string(tables), "\n") {
		if strings.TrimSpace(line) == "table "+footprint.TableFamily+" "+footprint.TableName {
			present = true
		}
	}
	if !present {
		return "", false, nil
	}
	out, err := runTool(ctx, "nft", nil, "list", "table", footprint.TableFamily, footprint.TableName)
	if err != nil {
		return "", false, err
	}
	return string(out), true, nil
}

func readApplied(w *Word) *capv1.NFTApplied {
	if w.env.ConvergeDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(w.env.ConvergeDir, nftFile))
	if err != nil {
		return nil
	}
	var a capv1.NFTApplied
	if json.Unmarshal(b, &a) != nil {
		return nil
	}
	return &a
}

func nftRead(ctx context.Context, w *Word, _ manifest.Capability, raw []byte) (any, error) {
	var req capv1.NFTRead
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	listing, present, err := nftListing(ctx)
	if err != nil {
		return nil, err
	}
	out := capv1.NFTReadResult{Present: present, Applied: readApplied(w)}
	if present {
		out.Listing, out.ListingSHA256 = listing, cas.Sum([]byte(listing))
	}
	return out, nil
}

func nftApply(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.NFTApply
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	fw := req.Firewall
	fp := &footprint.Footprint{Schema: footprint.SchemaName, Firewall: &fw}
	if err := footprint.Validate(fp); err != nil {
		return nil, err
	}
	if err := check(ctx, w, fp); err != nil {
		return nil, err
	}
	dir, err := convergeDir(w, c.Cap)
	if err != nil {
		return nil, err
	}
	if _, err := runTool(ctx, "nft", []byte(footprint.ApplyScript(fw)), "-f", "-"); err != nil {
		return nil, err
	}
	listing, present, err := nftListing(ctx)
	if err != nil {
		return nil, err
	}
	out := capv1.NFTReadResult{Present: present}
	if !present {
		if err := os.Remove(filepath.Join(dir, nftFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, errcode.Wrap(err, errcode.CapabilityFailed, "nft.apply: cannot remove the firewall's record")
		}
		return out, nil
	}
	out.Listing, out.ListingSHA256 = listing, cas.Sum([]byte(listing))
	out.Applied = &capv1.NFTApplied{Rendered: footprint.TableDigest(fw), Listing: out.ListingSHA256}
	b, _ := json.Marshal(out.Applied)
	if err := writeState(dir, nftFile, b); err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "nft.apply: the table is applied but its record could not be written")
	}
	return out, nil
}
