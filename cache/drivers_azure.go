//go:build gotpu_azure && !gotpu_noremote

package cache

import _ "gocloud.dev/blob/azureblob" // azblob://container (Azure Blob Storage)
