package backups

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/backup/presign"
	"github.com/lexicon-fleet/lexicon/plane/api"
	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// AddTarget checks a target (list, put, get and delete of a probe object under its prefix) and stores
// it, its secret sealed, only when every step passed. A failed check answers the code of the step that
// failed, the step named in details.operation, and stores nothing.
func (r *Room) AddTarget(ctx context.Context, who api.Token, req api.BackupTargetRequest) (api.BackupTarget, error) {
	t := presign.Target{Name: req.Name, Endpoint: req.Endpoint, Region: req.Region, Bucket: req.Bucket, Prefix: strings.Trim(req.Prefix, "/"),
		AccessKeyID: req.AccessKeyID, SecretAccessKey: req.SecretAccessKey, VirtualHosted: req.VirtualHosted}
	if !backup.ValidNodeID(req.Name) {
		return api.BackupTarget{}, errcode.New(errcode.RequestMalformed, "a target's name is 1 to 128 letters, digits, '-', '_' or '.'").
			With(errcode.DetailField, "name")
	}
	if err := t.Validate(); err != nil {
		return api.BackupTarget{}, err
	}
	if _, err := backup.ParseRecipients([]string{req.Recovery}); err != nil {
		return api.BackupTarget{}, errcode.Wrap(err, errcode.RequestMalformed, "recovery is the fleet's recovery recipient (age1...)").
			With(errcode.DetailField, "recovery")
	}
	if r.c.Key == nil {
		return api.BackupTarget{}, errcode.New(errcode.InternalError, "the plane has no master key to seal the target's secret")
	}
	if err := Probe(ctx, t).Err(); err != nil {
		return api.BackupTarget{}, err
	}
	sealed, keyID := r.c.Key.SealWithID([]byte(t.SecretAccessKey), seal.BackupTargetContext(t.Name))
	row, err := r.c.Store.BackupTargetCreate(ctx, store.BackupTargetCreateParams{Now: r.now(), Target: store.BackupTarget{
		Name: t.Name, Endpoint: t.Endpoint, Region: t.Region, Bucket: t.Bucket, Prefix: t.Prefix, AccessKeyID: t.AccessKeyID,
		VirtualHosted: t.VirtualHosted, Recovery: req.Recovery, KeyID: keyID, CreatedBy: who.Name,
		Sealed: sealed,
	}})
	if err != nil {
		return api.BackupTarget{}, err
	}
	r.log.Info("backup target added", "target", row.Name, "endpoint", row.Endpoint, "bucket", row.Bucket, "by", who.Name)
	return targetAPI(row), nil
}

// ListTargets lists the targets by name.
func (r *Room) ListTargets(ctx context.Context, _ api.Token) (api.BackupTargetList, error) {
	rows, err := r.c.Store.BackupTargetList(ctx, store.BackupTargetListParams{})
	out := api.BackupTargetList{Targets: []api.BackupTarget{}}
	for _, t := range rows {
		out.Targets = append(out.Targets, targetAPI(t))
	}
	return out, err
}

// ShowTarget answers one target.
func (r *Room) ShowTarget(ctx context.Context, _ api.Token, name string) (api.BackupTarget, error) {
	t, err := r.c.Store.BackupTargetGet(ctx, store.BackupTargetGetParams{Name: name})
	return targetAPI(t), err
}

// RemoveTarget forgets a target. Its runs stay in the bucket.
func (r *Room) RemoveTarget(ctx context.Context, who api.Token, name string) (api.BackupTarget, error) {
	t, err := r.c.Store.BackupTargetGet(ctx, store.BackupTargetGetParams{Name: name})
	if err != nil {
		return api.BackupTarget{}, err
	}
	if err := r.c.Store.BackupTargetDelete(ctx, store.BackupTargetDeleteParams{Name: name}); err != nil {
		return api.BackupTarget{}, err
	}
	r.log.Info("backup target removed", "target", name, "by", who.Name)
	return targetAPI(t), nil
}

// CheckTarget probes a stored target again.
func (r *Room) CheckTarget(ctx context.Context, _ api.Token, name string) (api.BackupCheck, error) {
	t, err := r.target(ctx, name)
	if err != nil {
		return api.BackupCheck{}, err
	}
	c := Probe(ctx, t)
	return c.BackupCheck, nil
}

// target is a stored target with its secret opened.
func (r *Room) target(ctx context.Context, name string) (presign.Target, error) {
	row, err := r.c.Store.BackupTargetGet(ctx, store.BackupTargetGetParams{Name: name})
	if err != nil {
		return presign.Target{}, err
	}
	if r.c.Key == nil {
		return presign.Target{}, errcode.New(errcode.InternalError, "the plane has no master key to open the target's secret")
	}
	secret, err := r.c.Key.OpenAs(row.Sealed, seal.BackupTargetContext(row.Name), row.KeyID)
	if err != nil {
		return presign.Target{}, err
	}
	return presign.Target{Name: row.Name, Endpoint: row.Endpoint, Region: row.Region, Bucket: row.Bucket, Prefix: row.Prefix,
		AccessKeyID: row.AccessKeyID, SecretAccessKey: string(secret), VirtualHosted: row.VirtualHosted}, nil
}

func targetAPI(t store.BackupTarget) api.BackupTarget {
	return api.BackupTarget{Name: t.Name, Endpoint: t.Endpoint, Region: t.Region, Bucket: t.Bucket, Prefix: t.Prefix,
		AccessKeyID: t.AccessKeyID, VirtualHosted: t.VirtualHosted, Recovery: t.Recovery, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt}
}

// Check is a probe's outcome, with the error of the step that failed.
type Check struct {
	api.BackupCheck
	err error
}

// Err is the failed step's error, or nil.
func (c Check) Err() error { return c.err }

// Probe checks that the plane can list, put, get and delete under the target's prefix, in that
// order, stopping at the first step that fails. The probe object's key ends in a random part, so two
// probes never meet; it is deleted by the last step.
func Probe(ctx context.Context, t presign.Target) Check {
	c := Check{BackupCheck: api.BackupCheck{Target: t.Name, Steps: []api.BackupCheckStep{}}}
	client, err := presign.Client(t)
	if err != nil {
		c.err = err
		return c
	}
	key := probeKey(t.Prefix)
	body := []byte("lexicon backup target probe " + rand.Text() + "\n")
	steps := []func() error{
		func() error {
			_, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(t.Bucket), Prefix: aws.String(key), MaxKeys: aws.Int32(1)})
			return err
		},
		func() error {
			_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key), Body: bytes.NewReader(body),
				ContentLength: aws.Int64(int64(len(body)))})
			return err
		},
		func() error {
			out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key)})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			got, err := io.ReadAll(io.LimitReader(out.Body, int64(len(body))+1))
			if err != nil {
				return err
			}
			if !bytes.Equal(got, body) {
				return errcode.New(errcode.BackupTargetRefused, "the probe object read back is not what was written (%d bytes, not %d)", len(got), len(body))
			}
			return nil
		},
		func() error {
			_, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(t.Bucket), Key: aws.String(key)})
			return err
		},
	}
	for i, run := range steps {
		name := api.BackupProbeSteps[i]
		if err := run(); err != nil {
			e := s3Error(err, t.Name).With(errcode.DetailOperation, name).With(errcode.DetailName, t.Name)
			c.Steps = append(c.Steps, api.BackupCheckStep{Step: name, Code: e.Code, Message: e.Message})
			e.Message = fmt.Sprintf("target %s: the %s step failed: %s", t.Name, name, e.Message)
			c.err = e
			return c
		}
		c.Steps = append(c.Steps, api.BackupCheckStep{Step: name, OK: true})
	}
	c.OK = true
	return c
}

func probeKey(prefix string) string {
	k := ".lexicon-probe-" + strings.ToLower(rand.Text()[:12])
	if prefix == "" {
		return k
	}
	return prefix + "/" + k
}

// s3Error names what an S3 call's failure means for a target: the credentials (a key or signature
// the service refuses), a refusal (access denied, no such bucket, a read-only service), or the
// service out of reach (a network error or a server error).
func s3Error(err error, target string) *errcode.Error {
	var e *errcode.Error
	if errors.As(err, &e) {
		return e
	}
	var api smithy.APIError
	var resp *awshttp.ResponseError
	status := 0
	if errors.As(err, &resp) {
		status = resp.HTTPStatusCode()
	}
	if errors.As(err, &api) {
		msg := api.ErrorCode()
		if m := api.ErrorMessage(); m != "" {
			msg += ": " + m
		}
		var out *errcode.Error
		switch api.ErrorCode() {
		case "SignatureDoesNotMatch", "InvalidAccessKeyId", "AuthorizationHeaderMalformed", "InvalidToken", "ExpiredToken":
			out = errcode.New(errcode.BackupCredentialsInvalid, "%s", msg)
		case "NoSuchKey":
			out = errcode.New(errcode.BackupObjectMissing, "%s", msg)
		default:
			if status >= 500 {
				out = errcode.New(errcode.BackupTargetUnreachable, "%s", msg)
			} else {
				out = errcode.New(errcode.BackupTargetRefused, "%s", msg)
			}
		}
		if status != 0 {
			out = out.With(errcode.DetailHTTPStatus, status)
		}
		return out
	}
	if status >= 500 || status == 0 {
		return errcode.New(errcode.BackupTargetUnreachable, "target %s cannot be reached: %s", target, cause(err))
	}
	return errcode.New(errcode.BackupTargetRefused, "target %s answered %d %s", target, status, http.StatusText(status))
}

// cause is the innermost error's text: the SDK's wrappers repeat the operation and the URL.
func cause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}
