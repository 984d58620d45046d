// Package presign is the plane's side of a node's access to a backup target: it holds the target's
// credentials and signs, for one job at a time, the only requests that job may make (AWS Signature
// Version 4, query-string form), so that a node writes and reads its own runs without ever holding a
// credential. It also builds the S3 client the plane uses with its own credentials (listing, reading
// manifests, deleting).
//
//	s, err := presign.New(target)
//	g, err := s.WriteGrant(ctx, presign.WriteRequest{Node: id, Recipients: []string{recovery}, Objects: 256})
//	g, err = s.ReadGrant(ctx, id, chain, time.Hour)
package presign

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Target is an S3-compatible bucket and the credentials that reach it, as the plane holds them.
type Target struct {
	Name string
	// Endpoint is the service's base URL (https://s3.eu-central-1.amazonaws.com, http://127.0.0.1:7070).
	Endpoint string
	Region   string
	Bucket   string
	// Prefix is the folder of the fleet's runs inside the bucket ("" for its top).
	Prefix          string
	AccessKeyID     string
	SecretAccessKey string
	// VirtualHosted addresses the bucket as a host name (bucket.endpoint) rather than a path.
	VirtualHosted bool
}

// Validate checks the target's shape; it does not reach it.
func (t Target) Validate() error {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.UsageInvalid, "target: "+format, args...).With(errcode.DetailField, field)
	}
	u, err := url.Parse(t.Endpoint)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.User != nil:
		return bad("endpoint", "the endpoint is an http(s) URL with no query or user")
	case t.Region == "":
		return bad("region", "a region is needed to sign")
	case t.Bucket == "" || strings.ContainsAny(t.Bucket, "/ "):
		return bad("bucket", "%q is not a bucket name", t.Bucket)
	case strings.Contains(t.Prefix, "//") || strings.ContainsAny(t.Prefix, " \\"):
		return bad("prefix", "%q is not a key prefix", t.Prefix)
	case t.AccessKeyID == "" || t.SecretAccessKey == "":
		return bad("credentials", "an access key id and secret are needed")
	}
	return nil
}

// Client returns an S3 client for the target, signing with its credentials. Checksums are sent and
// checked only where a request needs them: S3-compatible services differ in which they accept.
func Client(t Target) (*s3.Client, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	cfg := aws.Config{
		Region: t.Region,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: t.AccessKeyID, SecretAccessKey: t.SecretAccessKey, Source: "lexicon target " + t.Name}, nil
		}),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(strings.TrimRight(t.Endpoint, "/"))
		o.UsePathStyle = !t.VirtualHosted
	}), nil
}

// Signer presigns requests of one target.
type Signer struct {
	t Target
	p *s3.PresignClient
}

// New returns a signer for t.
func New(t Target) (*Signer, error) {
	c, err := Client(t)
	if err != nil {
		return nil, err
	}
	return &Signer{t: t, p: s3.NewPresignClient(c)}, nil
}

// Put presigns a PUT of key that the bucket refuses (412) when the key exists: the "If-None-Match: *"
// header is signed, so a holder of the request can add the object once and never replace it.
func (s *Signer) Put(ctx context.Context, key string, expires time.Duration) (channel.Presigned, error) {
	req, err := s.p.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.t.Bucket), Key: aws.String(key), IfNoneMatch: aws.String("*")},
		s3.WithPresignExpires(expires))
	if err != nil {
		return channel.Presigned{}, errcode.Wrap(err, errcode.InternalError, "cannot presign a PUT of %s", key)
	}
	return presigned(key, req.Method, req.URL, req.SignedHeader), nil
}

// Get presigns a GET of key.
func (s *Signer) Get(ctx context.Context, key string, expires time.Duration) (channel.Presigned, error) {
	req, err := s.p.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.t.Bucket), Key: aws.String(key)}, s3.WithPresignExpires(expires))
	if err != nil {
		return channel.Presigned{}, errcode.Wrap(err, errcode.InternalError, "cannot presign a GET of %s", key)
	}
	return presigned(key, req.Method, req.URL, req.SignedHeader), nil
}

func presigned(key, method, u string, h http.Header) channel.Presigned {
	p := channel.Presigned{Key: key, Method: method, URL: u}
	for k, v := range h {
		if strings.EqualFold(k, "host") || len(v) == 0 {
			continue
		}
		if p.Header == nil {
			p.Header = map[string]string{}
		}
		p.Header[k] = v[0]
	}
	return p
}

// WriteRequest asks for a write grant.
type WriteRequest struct {
	Node string
	// Parent is the newest run of the node the plane saw land, which an incremental may build on.
	Parent string
	// Recipients are the fleet's recovery recipients (age1...).
	Recipients []string
	// Objects is how many fresh keys to grant (at least 2). A run uses one per segment of its streams
	// and its index.
	Objects int
	// Expires is how long the requests work (default an hour).
	Expires time.Duration
	// Now is when the run is granted (default the clock).
	Now time.Time
}

// WriteGrant grants one new run: fresh keys under its own folder and its manifest.
func (s *Signer) WriteGrant(ctx context.Context, r WriteRequest) (*channel.BackupGrant, error) {
	if !backup.ValidNodeID(r.Node) || r.Objects < 2 || r.Objects > backup.MaxObjects || (r.Parent != "" && !backup.ValidRunID(r.Parent)) {
		return nil, errcode.New(errcode.UsageInvalid, "a write grant needs a node id, 2 to %d objects, and a run id as parent", backup.MaxObjects)
	}
	if _, err := backup.ParseRecipients(r.Recipients); err != nil {
		return nil, err
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	if r.Expires <= 0 {
		r.Expires = time.Hour
	}
	run := backup.NewRunID(now, r.Parent)
	g := &channel.BackupGrant{Target: s.t.Name, Node: r.Node, Prefix: backup.RunPrefix(s.t.Prefix, r.Node, run), Expires: now.Add(r.Expires),
		Run: run, Parent: r.Parent, Recipients: append([]string{}, r.Recipients...)}
	for i := 1; i <= r.Objects; i++ {
		p, err := s.Put(ctx, backup.ObjectKey(s.t.Prefix, r.Node, run, i), r.Expires)
		if err != nil {
			return nil, err
		}
		g.Objects = append(g.Objects, p)
	}
	m, err := s.Put(ctx, backup.ManifestKey(s.t.Prefix, r.Node, run), r.Expires)
	if err != nil {
		return nil, err
	}
	g.Manifest = &m
	return g, nil
}

// ReadGrant grants reading one chain of a node's runs, the full run first, as the manifests (read by
// the plane with its own credentials) name them.
func (s *Signer) ReadGrant(ctx context.Context, node string, chain []*backup.Manifest, expires time.Duration) (*channel.BackupGrant, error) {
	if len(chain) == 0 || !backup.ValidNodeID(node) {
		return nil, errcode.New(errcode.UsageInvalid, "a read grant needs a node id and a chain of runs")
	}
	if expires <= 0 {
		expires = time.Hour
	}
	g := &channel.BackupGrant{Target: s.t.Name, Node: node, Prefix: backup.NodePrefix(s.t.Prefix, node), Expires: time.Now().Add(expires)}
	for _, m := range chain {
		mp, err := s.Get(ctx, backup.ManifestKey(s.t.Prefix, node, m.Run), expires)
		if err != nil {
			return nil, err
		}
		gr := channel.GrantRun{Run: m.Run, Manifest: mp}
		prefix := backup.RunPrefix(s.t.Prefix, node, m.Run)
		for _, o := range m.Objects {
			// The manifest is the node's word: a key outside the run's own folder would have the plane
			// open another node's objects to it.
			if name, ok := strings.CutPrefix(o.Key, prefix); !ok || name == "" || strings.Contains(name, "/") {
				return nil, errcode.New(errcode.BackupManifestInvalid, "run %s names %s, which is not one of its own objects", m.Run, o.Key).
					With(errcode.DetailName, o.Key)
			}
			p, err := s.Get(ctx, o.Key, expires)
			if err != nil {
				return nil, err
			}
			gr.Objects = append(gr.Objects, p)
		}
		g.Runs = append(g.Runs, gr)
	}
	return g, nil
}
