provider "aws" {
  region = var.region

  default_tags {
    tags = var.tags
  }
}

# The EKS cluster (with Karpenter and the EKS Pod Identity agent) exists already; this stack only adds to it.
data "aws_eks_cluster" "this" {
  name = var.cluster_name
}

data "aws_eks_cluster_auth" "this" {
  name = var.cluster_name
}

data "aws_caller_identity" "current" {}

# Only the Karpenter manifests and device plugins (gated by install_cpu_nodepool / install_gpu_nodepool /
# install_neuron_nodepool) talk to the Kubernetes API.
provider "kubernetes" {
  host                   = data.aws_eks_cluster.this.endpoint
  cluster_ca_certificate = base64decode(data.aws_eks_cluster.this.certificate_authority[0].data)
  token                  = data.aws_eks_cluster_auth.this.token
}
