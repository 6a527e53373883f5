"""kubesim: a stand-in for kube-apiserver + kubelet, for krmpod's tests."""
