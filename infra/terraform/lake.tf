# The Parquet lake: raw/ (immutable loadgen output), requests/, runs/, reports/.

resource "aws_s3_bucket" "lake" {
  #checkov:skip=CKV_AWS_18:server access logging goes to the account's central log bucket, which the platform team configures (S3 data events are in the organisation CloudTrail)
  #checkov:skip=CKV_AWS_144:cross-region replication is a cost/DR decision outside this stack; versioning keeps every overwritten object
  #checkov:skip=CKV2_AWS_62:nothing consumes S3 event notifications; the DAGs read the lake on their own schedule
  bucket = var.lake_bucket_name
}

resource "aws_s3_bucket_ownership_controls" "lake" {
  bucket = aws_s3_bucket.lake.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "lake" {
  bucket = aws_s3_bucket.lake.id

  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_versioning" "lake" {
  bucket = aws_s3_bucket.lake.id

  versioning_configuration {
    status = "Enabled"
  }
}

# SSE-KMS with the AWS managed key aws/s3: its key policy lets any principal of the account that may use the
# bucket encrypt/decrypt through S3, so the roles in iam.tf need no kms: actions.
resource "aws_s3_bucket_server_side_encryption_configuration" "lake" {
  bucket = aws_s3_bucket.lake.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "aws:kms"
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "lake" {
  bucket = aws_s3_bucket.lake.id

  rule {
    id     = "expire-noncurrent-versions"
    status = "Enabled"

    filter {}

    noncurrent_version_expiration {
      noncurrent_days = var.lake_noncurrent_version_days
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = 7
    }
  }

  depends_on = [aws_s3_bucket_versioning.lake]
}

# Refuse plain-HTTP access. A Deny over every S3 action is the one place an action wildcard appears: it takes
# rights away and grants none.
data "aws_iam_policy_document" "lake_bucket" {
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.lake.arn, "${aws_s3_bucket.lake.arn}/*"]

    principals {
      type        = "*"
      identifiers = ["*"]
    }

    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "lake" {
  bucket = aws_s3_bucket.lake.id
  policy = data.aws_iam_policy_document.lake_bucket.json

  depends_on = [aws_s3_bucket_public_access_block.lake]
}
