# The Karpenter NodePools accelbench-gpu and accelbench-neuron, their EC2NodeClasses and their device plugins,
# each tier created only with its gate (install_gpu_nodepool / install_neuron_nodepool, both off by default).
# The NodePool manifests are YAML templates in infra/karpenter/ and the device plugins plain manifests in
# infra/k8s/device-plugins/, so that the tests render and validate the very files Terraform applies
# (tests/unit/test_infra_accelerated.py).

locals {
  gpu_ec2nodeclass = yamldecode(templatefile("${path.module}/../karpenter/gpu-ec2nodeclass.yaml.tftpl", {
    cluster_name       = var.cluster_name
    node_role_name     = var.karpenter_node_role_name
    kubernetes_version = var.kubernetes_version
    ami_release        = var.al2023_nvidia_ami_release
  }))

  gpu_nodepool = yamldecode(templatefile("${path.module}/../karpenter/gpu-nodepool.yaml.tftpl", {
    cpu_limit         = var.gpu_nodepool_cpu_limit
    memory_limit      = var.gpu_nodepool_memory_limit
    gpu_limit         = var.gpu_nodepool_gpu_limit
    consolidate_after = var.gpu_nodepool_consolidate_after
  }))

  neuron_ec2nodeclass = yamldecode(templatefile("${path.module}/../karpenter/neuron-ec2nodeclass.yaml.tftpl", {
    cluster_name       = var.cluster_name
    node_role_name     = var.karpenter_node_role_name
    kubernetes_version = var.kubernetes_version
    ami_release        = var.al2023_neuron_ami_release
  }))

  neuron_nodepool = yamldecode(templatefile("${path.module}/../karpenter/neuron-nodepool.yaml.tftpl", {
    cpu_limit         = var.neuron_nodepool_cpu_limit
    memory_limit      = var.neuron_nodepool_memory_limit
    neuron_limit      = var.neuron_nodepool_neuron_limit
    consolidate_after = var.neuron_nodepool_consolidate_after
  }))

  # Each device-plugin file holds several objects: manifest_decode_multi (kubernetes provider >= 2.28, Terraform
  # >= 1.8) splits them, and keying by kind/name keeps each object's address stable when the file is reordered.
  nvidia_device_plugin = {
    for m in provider::kubernetes::manifest_decode_multi(file("${path.module}/../k8s/device-plugins/nvidia-device-plugin.yaml")) :
    "${m.kind}/${m.metadata.name}" => m
  }
  neuron_device_plugin = {
    for m in provider::kubernetes::manifest_decode_multi(file("${path.module}/../k8s/device-plugins/neuron-device-plugin.yaml")) :
    "${m.kind}/${m.metadata.name}" => m
  }

  gpu_nodepool_name    = local.gpu_nodepool.metadata.name
  neuron_nodepool_name = local.neuron_nodepool.metadata.name
}

# ---- GPU tier --------------------------------------------------------------------------------

resource "kubernetes_manifest" "gpu_ec2nodeclass" {
  count    = var.install_gpu_nodepool ? 1 : 0
  manifest = local.gpu_ec2nodeclass
}

resource "kubernetes_manifest" "gpu_nodepool" {
  count    = var.install_gpu_nodepool ? 1 : 0
  manifest = local.gpu_nodepool

  depends_on = [kubernetes_manifest.gpu_ec2nodeclass]
}

# The gate sits in the for expression (not in a conditional between this map and {}): the two branches of a
# conditional would have different object types.
resource "kubernetes_manifest" "nvidia_device_plugin" {
  for_each = { for key, m in local.nvidia_device_plugin : key => m if var.install_gpu_nodepool }
  manifest = each.value
}

# ---- Neuron tier -----------------------------------------------------------------------------

resource "kubernetes_manifest" "neuron_ec2nodeclass" {
  count    = var.install_neuron_nodepool ? 1 : 0
  manifest = local.neuron_ec2nodeclass
}

resource "kubernetes_manifest" "neuron_nodepool" {
  count    = var.install_neuron_nodepool ? 1 : 0
  manifest = local.neuron_nodepool

  depends_on = [kubernetes_manifest.neuron_ec2nodeclass]
}

resource "kubernetes_manifest" "neuron_device_plugin" {
  for_each = { for key, m in local.neuron_device_plugin : key => m if var.install_neuron_nodepool }
  manifest = each.value
}
