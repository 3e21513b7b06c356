output "lake_uri" {
  description = "The lake root for the DAGs (s3://<bucket>/)."
  value       = "s3://${aws_s3_bucket.lake.bucket}/"
}

output "airflow_worker_role_arn" {
  description = "IAM role the Airflow workers get through EKS Pod Identity."
  value       = aws_iam_role.airflow_worker.arn
}

output "benchmark_pod_role_arn" {
  description = "IAM role the benchmark pods get through EKS Pod Identity (raw/ writes only)."
  value       = aws_iam_role.benchmark_pod.arn
}

output "airflow_api_server_role_arn" {
  description = "IAM role of the Airflow API server (the Benchmarks view reads reports/)"
  value       = aws_iam_role.airflow_api_server.arn
}

output "cpu_nodepool_name" {
  description = "Name of the Karpenter NodePool for the CPU tier, or null when install_cpu_nodepool is false."
  value       = var.install_cpu_nodepool ? local.cpu_nodepool_name : null
}

output "gpu_nodepool_name" {
  description = "Name of the Karpenter NodePool for the GPU tier, or null when install_gpu_nodepool is false."
  value       = var.install_gpu_nodepool ? local.gpu_nodepool_name : null
}

output "neuron_nodepool_name" {
  description = "Name of the Karpenter NodePool for the Neuron tier, or null when install_neuron_nodepool is false."
  value       = var.install_neuron_nodepool ? local.neuron_nodepool_name : null
}

output "benchmark_pool_slots" {
  description = "Slots of the Airflow pool ACCELBENCH_BENCHMARK_POOL: the benchmark pods the CPU NodePool always has room for."
  value       = local.benchmark_pool_slots
}
