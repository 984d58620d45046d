package backups

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// PruneResult is what one prune of a node's prefix removed.
type PruneResult struct {
	// Chains are the full runs whose chains were removed, oldest first.
	Chains []string
	// Orphans are runs without a manifest (failed, killed, or a chain's rest after a prune was
	// killed) that were removed.
	Orphans []string
	Objects int
}

// pruner deletes keys one by one; after, when set, is told of each deletion (the kill test stops the
// process there).
type pruner struct {
	client *s3.Client
	t      presign.Target
	after  func(key string)
}

func (p pruner) delete(ctx context.Context, key string) error {
	if _, err := p.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.t.Bucket), Key: aws.String(key)}); err != nil {
		return s3Error(err, p.t.Name).With(errcode.DetailOperation, "delete").With(errcode.DetailName, key)
	}
	if p.after != nil {
		p.after(key)
	}
	return nil
}

// Prune removes, from a bucket listing, the node's chains (a full run and its incrementals) whose
// newest run is older than keep, never the newest chain, and never a chain in part. keep is never
// shorter than floor. A chain's manifests go first, newest first, and then its objects: at every
// moment, a run whose manifest is still there has the manifests and objects of its whole chain, so a
// prune stopped anywhere (the plane killed) leaves no restore point that cannot restore; what is left
// of the chain has no manifest, and the next prune removes it as an orphan. Runs without a manifest
// older than keep are removed too.
func Prune(ctx context.Context, client *s3.Client, t presign.Target, node string, keep, floor time.Duration, now time.Time) (PruneResult, error) {
	return pruner{client: client, t: t}.prune(ctx, node, max(keep, floor), now)
}

func (p pruner) prune(ctx context.Context, node string, keep time.Duration, now time.Time) (PruneResult, error) {
	var res PruneResult
	have, err := List(ctx, p.client, p.t, node)
	if err != nil {
		return res, err
	}
	prefix := backup.NodePrefix(p.t.Prefix, node)
	keys := map[string][]string{} // run → its keys
	manifests := map[string]bool{}
	for k := range have {
		run, manifest, ok := backup.RunOfKey(prefix, k)
		if !ok {
			continue
		}
		keys[run] = append(keys[run], k)
		if manifest {
			manifests[run] = true
		}
	}
	chains := map[string][]string{} // full run → the runs with a manifest that build on it
	for run := range manifests {
		m, err := readManifest(ctx, p.client, p.t, backup.ManifestKey(p.t.Prefix, node, run))
		if err != nil {
			return res, err
		}
		chains[m.Chain[0]] = append(chains[m.Chain[0]], run)
	}
	cutoff := now.Add(-keep)
	roots := make([]string, 0, len(chains))
	for root := range chains {
		roots = append(roots, root)
		slices.Sort(chains[root])
	}
	slices.Sort(roots)
	inChain := map[string]bool{}
	for i, root := range roots {
		runs := chains[root]
		for _, r := range runs {
			inChain[r] = true
		}
		newest, _ := backup.RunTime(runs[len(runs)-1])
		if i == len(roots)-1 || !newest.Before(cutoff) {
			continue
		}
		for j := len(runs) - 1; j >= 0; j-- {
			if err := p.delete(ctx, backup.ManifestKey(p.t.Prefix, node, runs[j])); err != nil {
				return res, err
			}
			res.Objects++
		}
		for _, r := range runs {
			for _, k := range keys[r] {
				if strings.HasSuffix(k, "/"+backup.ManifestName) {
					continue
				}
				if err := p.delete(ctx, k); err != nil {
					return res, err
				}
				res.Objects++
			}
		}
		res.Chains = append(res.Chains, root)
	}
	orphans := make([]string, 0)
	for run := range keys {
		if inChain[run] || manifests[run] {
			continue
		}
		if t, ok := backup.RunTime(run); ok && t.Before(cutoff) {
			orphans = append(orphans, run)
		}
	}
	slices.Sort(orphans)
	for _, run := range orphans {
		for _, k := range keys[run] {
			if err := p.delete(ctx, k); err != nil {
				return res, err
			}
			res.Objects++
		}
		res.Orphans = append(res.Orphans, run)
	}
	return res, nil
}
