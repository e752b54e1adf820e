//go:build gotpu_gcs && !gotpu_noremote

package cache

import _ "gocloud.dev/blob/gcsblob" // gs://bucket (Google Cloud Storage)
