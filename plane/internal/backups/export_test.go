package backups

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lexicon-fleet/lexicon/backup/presign"
)

// PruneWith is Prune telling after of each key it deleted: the kill test stops the process there.
func PruneWith(ctx context.Context, client *s3.Client, t presign.Target, node string, keep, floor time.Duration, now time.Time,
	after func(key string)) (PruneResult, error) {
	return pruner{client: client, t: t, after: after}.prune(ctx, node, max(keep, floor), now)
}
