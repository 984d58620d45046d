package backups

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Listing is what the bucket holds under one node's prefix, by key: each object's size.
type Listing map[string]int64

// List lists a node's prefix with the plane's own credentials: the witness's and retention's only
// source of what is in the bucket.
func List(ctx context.Context, client *s3.Client, t presign.Target, node string) (Listing, error) {
	out := Listing{}
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(t.Bucket), Prefix: aws.String(backup.NodePrefix(t.Prefix, node))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Error(err, t.Name).With(errcode.DetailOperation, "list")
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out, nil
}

// readManifest reads and parses one manifest with the plane's credentials.
func readManifest(ctx context.Context, client *s3.Client, t presign.Target, key string) (*backup.Manifest, error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key)})
	if err != nil {
		e := s3Error(err, t.Name)
		if e.Code == errcode.BackupObjectMissing {
			return nil, errcode.New(errcode.BackupObjectMissing, "the manifest %s is not in the bucket (removed by retention, or behind the plane's back)", key).
				With(errcode.DetailOperation, "get")
		}
		return nil, e.With(errcode.DetailOperation, "get")
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, backup.MaxManifestSize+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.BackupTargetUnreachable, "reading %s", key)
	}
	return backup.ParseManifest(b)
}

// Verdict is the witness's judgement of one run a node reported.
type Verdict struct {
	State  store.BackupJobState
	Detail string
	Kind   string
	Bytes  int64
}

// Witness checks a run the node reported as committed against the plane's own listing of the node's
// prefix: the manifest must be there (else the run did not land), and every object it names must be
// there at its size (else the run is incomplete).
func Witness(ctx context.Context, client *s3.Client, t presign.Target, node, run string) (Verdict, error) {
	have, err := List(ctx, client, t, node)
	if err != nil {
		return Verdict{}, err
	}
	mkey := backup.ManifestKey(t.Prefix, node, run)
	if _, ok := have[mkey]; !ok {
		n := 0
		prefix := backup.RunPrefix(t.Prefix, node, run)
		for k := range have {
			if len(k) > len(prefix) && k[:len(prefix)] == prefix {
				n++
			}
		}
		if n == 0 {
			return Verdict{State: store.BackupNotLanding, Detail: fmt.Sprintf("the node reported run %s committed, and the bucket holds nothing of it", run)}, nil
		}
		return Verdict{State: store.BackupNotLanding, Detail: fmt.Sprintf("the node reported run %s committed, and the bucket holds %d of its objects but no manifest", run, n)}, nil
	}
	m, err := readManifest(ctx, client, t, mkey)
	if err != nil {
		return Verdict{State: store.BackupIncomplete, Detail: fmt.Sprintf("run %s's manifest cannot be read: %v", run, err)}, nil
	}
	if m.Node != node || m.Run != run {
		return Verdict{State: store.BackupIncomplete, Detail: fmt.Sprintf("the manifest at %s names node %s, run %s", mkey, m.Node, m.Run)}, nil
	}
	v := Verdict{State: store.BackupWitnessed, Kind: m.Kind, Detail: fmt.Sprintf("%d objects in the bucket at their sizes", len(m.Objects))}
	missing, first := 0, ""
	for _, o := range m.Objects {
		size, ok := have[o.Key]
		if !ok || size != o.Size {
			if missing == 0 {
				first = o.Key
				if ok {
					first += fmt.Sprintf(" (%d bytes, not %d)", size, o.Size)
				}
			}
			missing++
			continue
		}
		v.Bytes += size
	}
	if missing > 0 {
		return Verdict{State: store.BackupIncomplete, Kind: m.Kind, Bytes: v.Bytes,
			Detail: fmt.Sprintf("run %s: %d of its %d objects are not in the bucket at their size, first %s", run, missing, len(m.Objects), first)}, nil
	}
	return v, nil
}
