# The Karpenter NodePool accelbench-cpu and its EC2NodeClass, created only with install_cpu_nodepool = true.
# The manifests live as YAML templates in infra/karpenter/ so that the tests render and validate the very
# files Terraform applies (tests/unit/test_infra_karpenter.py).

locals {
  cpu_ec2nodeclass = yamldecode(templatefile("${path.module}/../karpenter/cpu-ec2nodeclass.yaml.tftpl", {
    cluster_name       = var.cluster_name
    node_role_name     = var.karpenter_node_role_name
    kubernetes_version = var.kubernetes_version
    ami_release        = var.al2023_ami_release
  }))

  cpu_nodepool = yamldecode(templatefile("${path.module}/../karpenter/cpu-nodepool.yaml.tftpl", {
    cpu_limit         = var.cpu_nodepool_cpu_limit
    node_vcpus_below  = var.cpu_nodepool_max_node_vcpus + 1
    memory_limit      = var.cpu_nodepool_memory_limit
    consolidate_after = var.cpu_nodepool_consolidate_after
  }))

  cpu_nodepool_name = local.cpu_nodepool.metadata.name
  # Every node has at most cpu_nodepool_max_node_vcpus and each benchmark pod takes a whole node, so this many
  # benchmark pods always fit under the NodePool's cpu limit: the size of the Airflow pool that runs them.
  benchmark_pool_slots = floor(var.cpu_nodepool_cpu_limit / var.cpu_nodepool_max_node_vcpus)
}

resource "kubernetes_manifest" "cpu_ec2nodeclass" {
  count    = var.install_cpu_nodepool ? 1 : 0
  manifest = local.cpu_ec2nodeclass
}

resource "kubernetes_manifest" "cpu_nodepool" {
  count    = var.install_cpu_nodepool ? 1 : 0
  manifest = local.cpu_nodepool

  depends_on = [kubernetes_manifest.cpu_ec2nodeclass]
}
