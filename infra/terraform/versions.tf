terraform {
  required_version = ">= 1.9" # validations that refer to other variables

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.80, < 7.0"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.31, < 4.0"
    }
  }
}
