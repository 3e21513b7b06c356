variable "region" {
  description = "AWS region of the EKS cluster and the lake bucket."
  type        = string
  default     = "us-east-1"
}

variable "cluster_name" {
  description = "Name of the existing EKS cluster (Karpenter >= 1.13 installed; Kubernetes 1.33-1.37)."
  type        = string
}

variable "tags" {
  description = "Tags added to every AWS resource this stack creates."
  type        = map(string)
  default     = { "app.kubernetes.io/part-of" = "accelbench-campaigns" }
}

# ---- the lake ---------------------------------------------------------------------------------

variable "lake_bucket_name" {
  description = "Name of the S3 bucket that holds the Parquet lake (raw/, requests/, runs/, reports/)."
  type        = string
}

variable "lake_noncurrent_version_days" {
  description = "Days a replaced or deleted lake object version is kept before S3 expires it."
  type        = number
  default     = 90
}

# ---- workload identities (EKS Pod Identity) ---------------------------------------------------

variable "airflow_namespace" {
  description = "Namespace of the Airflow release (infra/helm/airflow-values.yaml)."
  type        = string
  default     = "airflow"
}

variable "airflow_worker_service_account" {
  description = "Service account of the Airflow workers / KubernetesExecutor task pods."
  type        = string
  default     = "airflow-worker"
}

variable "airflow_api_server_service_account" {
  description = "Service account of the Airflow API server, which serves the Benchmarks view (reads reports/)."
  type        = string
  default     = "airflow-api-server"
}

variable "benchmark_namespace" {
  description = "Namespace of the benchmark pods (accelbench.k8s.placement.BENCHMARK_NAMESPACE)."
  type        = string
  default     = "accelbench-benchmarks"
}

variable "benchmark_service_account" {
  description = "Service account of the benchmark pods (infra/k8s/benchmark-serviceaccount.yaml)."
  type        = string
  default     = "accelbench-benchmark"
}

# ---- the CPU NodePool -------------------------------------------------------------------------

variable "install_cpu_nodepool" {
  description = "Create the Karpenter NodePool accelbench-cpu and its EC2NodeClass (needs the Karpenter v1 CRDs in the cluster)."
  type        = bool
  default     = false
}

variable "karpenter_node_role_name" {
  description = "IAM role (name) of the Karpenter-launched nodes of every accelbench NodePool; Karpenter creates their instance profile."
  type        = string
  default     = ""

  validation {
    condition     = !(var.install_cpu_nodepool || var.install_gpu_nodepool || var.install_neuron_nodepool) || length(var.karpenter_node_role_name) > 0
    error_message = "karpenter_node_role_name is required when install_cpu_nodepool, install_gpu_nodepool or install_neuron_nodepool is true."
  }
}

variable "kubernetes_version" {
  description = "Kubernetes minor version of the cluster; selects the EKS-optimised AL2023 AMIs' SSM parameter paths (arm64 standard, x86_64 nvidia, x86_64 neuron)."
  type        = string
  default     = "1.33"

  validation {
    condition     = can(regex("^1\\.[0-9]+$", var.kubernetes_version))
    error_message = "kubernetes_version must look like 1.33."
  }
}

variable "al2023_ami_release" {
  description = "EKS-optimised AL2023 arm64 AMI in the SSM parameter path: 'recommended' follows every release; pin one (e.g. amazon-eks-node-al2023-arm64-standard-1.33-v20260701) so kernels do not drift between campaigns."
  type        = string
  default     = "recommended"

  validation {
    condition     = can(regex("^(recommended|amazon-eks-node-al2023-arm64-standard-1\\.[0-9]+-v[0-9]{8})$", var.al2023_ami_release))
    error_message = "al2023_ami_release must be 'recommended' or a release like amazon-eks-node-al2023-arm64-standard-1.33-v20260701."
  }
}

variable "cpu_nodepool_cpu_limit" {
  description = "Most vCPUs the CPU NodePool may run at once (a spending cap)."
  type        = number
  default     = 1024
}

variable "cpu_nodepool_max_node_vcpus" {
  description = "Largest node (vCPUs) the CPU NodePool launches. With cpu_nodepool_cpu_limit it sizes the Airflow pool of benchmark tasks (output benchmark_pool_slots): that many benchmark pods always fit under the limit."
  type        = number
  default     = 192

  validation {
    condition     = var.cpu_nodepool_max_node_vcpus >= 1 && var.cpu_nodepool_max_node_vcpus <= var.cpu_nodepool_cpu_limit
    error_message = "cpu_nodepool_max_node_vcpus must be between 1 and cpu_nodepool_cpu_limit."
  }
}

variable "cpu_nodepool_memory_limit" {
  description = "Most memory the CPU NodePool may run at once, as a Kubernetes quantity."
  type        = string
  default     = "8192Gi"
}

variable "cpu_nodepool_consolidate_after" {
  description = "How long an empty benchmark node is kept for the next pod of a campaign before Karpenter removes it."
  type        = string
  default     = "10m"

  validation {
    condition     = can(regex("^([0-9]+(s|m|h))+$", var.cpu_nodepool_consolidate_after))
    error_message = "cpu_nodepool_consolidate_after must be a duration such as 10m or 1h."
  }
}

# ---- the GPU NodePool (NVIDIA) ----------------------------------------------------------------

variable "install_gpu_nodepool" {
  description = "Create the Karpenter NodePool accelbench-gpu, its EC2NodeClass and the NVIDIA device plugin DaemonSet (needs the Karpenter v1 CRDs in the cluster)."
  type        = bool
  default     = false
}

variable "al2023_nvidia_ami_release" {
  description = "EKS-optimised AL2023 x86_64 NVIDIA AMI in the SSM parameter path: 'recommended' follows every release; pin one (e.g. amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260827) so kernels and drivers do not drift between campaigns."
  type        = string
  default     = "recommended"

  validation {
    condition     = can(regex("^(recommended|amazon-eks-node-al2023-x86_64-nvidia-([0-9]+-)?1\\.[0-9]+-v[0-9]{8})$", var.al2023_nvidia_ami_release))
    error_message = "al2023_nvidia_ami_release must be 'recommended' or a release like amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260827."
  }
}

variable "gpu_nodepool_cpu_limit" {
  description = "Most vCPUs the GPU NodePool may run at once (a spending cap; a p5.48xlarge or g6e.48xlarge has 192)."
  type        = number
  default     = 1024
}

variable "gpu_nodepool_memory_limit" {
  description = "Most memory the GPU NodePool may run at once, as a Kubernetes quantity (a p5.48xlarge has 2048Gi)."
  type        = string
  default     = "8192Gi"
}

variable "gpu_nodepool_gpu_limit" {
  description = "Most NVIDIA GPUs (nvidia.com/gpu) the GPU NodePool may run at once: the cap that matters for cost."
  type        = number
  default     = 32

  validation {
    condition     = var.gpu_nodepool_gpu_limit >= 1 && floor(var.gpu_nodepool_gpu_limit) == var.gpu_nodepool_gpu_limit
    error_message = "gpu_nodepool_gpu_limit must be a whole number of GPUs, at least 1."
  }
}

variable "gpu_nodepool_consolidate_after" {
  description = "How long an empty GPU node is kept for the next pod of a campaign before Karpenter removes it."
  type        = string
  default     = "10m"

  validation {
    condition     = can(regex("^([0-9]+(s|m|h))+$", var.gpu_nodepool_consolidate_after))
    error_message = "gpu_nodepool_consolidate_after must be a duration such as 10m or 1h."
  }
}

# ---- the Neuron NodePool (Inferentia2 / Trainium) ---------------------------------------------

variable "install_neuron_nodepool" {
  description = "Create the Karpenter NodePool accelbench-neuron, its EC2NodeClass and the Neuron device plugin (DaemonSet and its RBAC) (needs the Karpenter v1 CRDs in the cluster)."
  type        = bool
  default     = false
}

variable "al2023_neuron_ami_release" {
  description = "EKS-optimised AL2023 x86_64 Neuron AMI in the SSM parameter path: 'recommended' follows every release; pin one (e.g. amazon-eks-node-al2023-x86_64-neuron-1.33-v20260903) so kernels and drivers do not drift between campaigns."
  type        = string
  default     = "recommended"

  validation {
    condition     = can(regex("^(recommended|amazon-eks-node-al2023-x86_64-neuron-1\\.[0-9]+-v[0-9]{8})$", var.al2023_neuron_ami_release))
    error_message = "al2023_neuron_ami_release must be 'recommended' or a release like amazon-eks-node-al2023-x86_64-neuron-1.33-v20260903."
  }
}

variable "neuron_nodepool_cpu_limit" {
  description = "Most vCPUs the Neuron NodePool may run at once (a spending cap; an inf2.48xlarge has 192)."
  type        = number
  default     = 1024
}

variable "neuron_nodepool_memory_limit" {
  description = "Most memory the Neuron NodePool may run at once, as a Kubernetes quantity (an inf2.48xlarge has 768Gi)."
  type        = string
  default     = "4096Gi"
}

variable "neuron_nodepool_neuron_limit" {
  description = "Most Neuron devices (aws.amazon.com/neuron) the Neuron NodePool may run at once: the cap that matters for cost."
  type        = number
  default     = 32

  validation {
    condition     = var.neuron_nodepool_neuron_limit >= 1 && floor(var.neuron_nodepool_neuron_limit) == var.neuron_nodepool_neuron_limit
    error_message = "neuron_nodepool_neuron_limit must be a whole number of Neuron devices, at least 1."
  }
}

variable "neuron_nodepool_consolidate_after" {
  description = "How long an empty Neuron node is kept for the next pod of a campaign before Karpenter removes it."
  type        = string
  default     = "10m"

  validation {
    condition     = can(regex("^([0-9]+(s|m|h))+$", var.neuron_nodepool_consolidate_after))
    error_message = "neuron_nodepool_consolidate_after must be a duration such as 10m or 1h."
  }
}
