# Two workload identities, both through EKS Pod Identity (no OIDC provider to manage):
# - the Airflow workers: the read-only catalog/pricing calls plus the lake (read all, write the derived tables);
# - the benchmark pods: write raw/ results, nothing else;
# - the Airflow API server (the Benchmarks view): read reports/, nothing else.

locals {
  lake_arn = aws_s3_bucket.lake.arn
}

data "aws_iam_policy_document" "pod_identity_trust" {
  statement {
    sid     = "EksPodIdentity"
    effect  = "Allow"
    actions = ["sts:AssumeRole", "sts:TagSession"]

    principals {
      type        = "Service"
      identifiers = ["pods.eks.amazonaws.com"]
    }

    # Only this account's cluster may hand the role out (confused-deputy guard).
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [data.aws_caller_identity.current.account_id]
    }

    condition {
      test     = "ArnEquals"
      variable = "aws:SourceArn"
      values   = [data.aws_eks_cluster.this.arn]
    }
  }
}

# ---- Airflow workers --------------------------------------------------------------------------

resource "aws_iam_role" "airflow_worker" {
  name               = "${var.cluster_name}-accelbench-airflow-worker"
  description        = "accelbench-campaigns Airflow workers: pricing/EC2 read-only calls and the Parquet lake"
  assume_role_policy = data.aws_iam_policy_document.pod_identity_trust.json
}

# pricing:GetProducts, ec2:DescribeInstanceTypes, ec2:DescribeSpotPriceHistory: the one policy file the
# catalog and pricing DAGs need (AWS does not scope these three to resources).
resource "aws_iam_policy" "catalog_refresh" {
  name        = "${var.cluster_name}-accelbench-catalog-refresh"
  description = "Read-only Pricing API and EC2 describe calls of the catalog and pricing DAGs"
  policy      = file("${path.module}/../iam/catalog-refresh-policy.json")
}

data "aws_iam_policy_document" "airflow_worker_lake" {
  statement {
    sid       = "ListLakePrefixes"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.lake_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      # every prefix of the lake (accelbench.lake.schemas: its tables, then raw/, imports/, reports/, traces/;
      # models/: planning lists a streamed model's folder, accelbench.campaign.weights)
      values = [
        "raw/*", "requests/*", "sketches/*", "runs/*", "capacities/*", "quality/*", "startups/*", "costs/*",
        "imports/*", "reports/*", "traces/*", "models/*",
      ]
    }
  }

  statement {
    sid     = "ReadLake"
    effect  = "Allow"
    actions = ["s3:GetObject"]
    resources = [
      "${local.lake_arn}/raw/*",
      "${local.lake_arn}/requests/*",
      "${local.lake_arn}/sketches/*",
      "${local.lake_arn}/runs/*",
      "${local.lake_arn}/capacities/*",
      "${local.lake_arn}/quality/*",
      "${local.lake_arn}/startups/*",
      "${local.lake_arn}/costs/*",
      "${local.lake_arn}/imports/*",
      "${local.lake_arn}/reports/*",
      "${local.lake_arn}/traces/*",
      "${local.lake_arn}/models/*",
    ]
  }

  # raw/ is written by the benchmark pods only and stays immutable for the workers.
  statement {
    sid     = "WriteDerivedTables"
    effect  = "Allow"
    actions = ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
    resources = [
      "${local.lake_arn}/requests/*",
      "${local.lake_arn}/sketches/*",
      "${local.lake_arn}/runs/*",
      "${local.lake_arn}/capacities/*",
      "${local.lake_arn}/quality/*",
      "${local.lake_arn}/startups/*",
      "${local.lake_arn}/costs/*",
      "${local.lake_arn}/imports/*",
      "${local.lake_arn}/reports/*",
      "${local.lake_arn}/traces/*",
    ]
  }
}

resource "aws_iam_policy" "airflow_worker_lake" {
  name        = "${var.cluster_name}-accelbench-airflow-lake"
  description = "accelbench lake: list and read every prefix, write every prefix but raw/"
  policy      = data.aws_iam_policy_document.airflow_worker_lake.json
}

resource "aws_iam_role_policy_attachment" "airflow_worker_catalog" {
  role       = aws_iam_role.airflow_worker.name
  policy_arn = aws_iam_policy.catalog_refresh.arn
}

resource "aws_iam_role_policy_attachment" "airflow_worker_lake" {
  role       = aws_iam_role.airflow_worker.name
  policy_arn = aws_iam_policy.airflow_worker_lake.arn
}

resource "aws_eks_pod_identity_association" "airflow_worker" {
  cluster_name    = var.cluster_name
  namespace       = var.airflow_namespace
  service_account = var.airflow_worker_service_account
  role_arn        = aws_iam_role.airflow_worker.arn
}

# ---- benchmark pods ---------------------------------------------------------------------------

resource "aws_iam_role" "benchmark_pod" {
  name               = "${var.cluster_name}-accelbench-benchmark-pod"
  description        = "accelbench-campaigns benchmark pods: write raw/ results to the lake, read the traces they replay and the weights they stream"
  assume_role_policy = data.aws_iam_policy_document.pod_identity_trust.json
}

data "aws_iam_policy_document" "benchmark_pod_lake" {
  statement {
    sid       = "WriteRawResults"
    effect    = "Allow"
    actions   = ["s3:PutObject", "s3:AbortMultipartUpload"]
    resources = ["${local.lake_arn}/raw/*"]
  }

  # A trace workload's timed trace, stored by accelbench_make_trace (the planner refuses any other place).
  statement {
    sid       = "ReadTraces"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${local.lake_arn}/traces/*"]
  }

  # Streamed weights (ACCELBENCH_WEIGHTS_URI=s3://<lake bucket>/models): vLLM's Run:ai streamer lists the
  # model's folder and reads its files in ranges.
  statement {
    sid       = "ListModels"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.lake_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["models/*"]
    }
  }

  statement {
    sid       = "ReadModels"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${local.lake_arn}/models/*"]
  }
}

resource "aws_iam_role_policy" "benchmark_pod_lake" {
  name   = "accelbench-lake-raw-write-traces-read"  # and models/ read (the name kept: no replacement)
  role   = aws_iam_role.benchmark_pod.id
  policy = data.aws_iam_policy_document.benchmark_pod_lake.json
}

resource "aws_eks_pod_identity_association" "benchmark_pod" {
  cluster_name    = var.cluster_name
  namespace       = var.benchmark_namespace
  service_account = var.benchmark_service_account
  role_arn        = aws_iam_role.benchmark_pod.arn
}

# ---- Airflow API server (the Benchmarks view) -------------------------------------------------

resource "aws_iam_role" "airflow_api_server" {
  name               = "${var.cluster_name}-accelbench-airflow-api-server"
  description        = "accelbench-campaigns Benchmarks view in the Airflow API server: read reports/"
  assume_role_policy = data.aws_iam_policy_document.pod_identity_trust.json
}

data "aws_iam_policy_document" "airflow_api_server_lake" {
  statement {
    sid       = "ListReports"
    effect    = "Allow"
    actions   = ["s3:ListBucket"]
    resources = [local.lake_arn]

    condition {
      test     = "StringLike"
      variable = "s3:prefix"
      values   = ["reports/*"]
    }
  }

  statement {
    sid       = "ReadReports"
    effect    = "Allow"
    actions   = ["s3:GetObject"]
    resources = ["${local.lake_arn}/reports/*"]
  }
}

resource "aws_iam_role_policy" "airflow_api_server_lake" {
  name   = "accelbench-lake-reports-read"
  role   = aws_iam_role.airflow_api_server.id
  policy = data.aws_iam_policy_document.airflow_api_server_lake.json
}

resource "aws_eks_pod_identity_association" "airflow_api_server" {
  cluster_name    = var.cluster_name
  namespace       = var.airflow_namespace
  service_account = var.airflow_api_server_service_account
  role_arn        = aws_iam_role.airflow_api_server.arn
}
