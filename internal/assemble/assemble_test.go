package assemble

import (
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestFillDeploymentOptions: an unversioned worker's options become a
// version of the deployment; a host's own deployment options are kept.
func TestFillDeploymentOptions(t *testing.T) {
	var wo worker.Options
	if !FillDeploymentOptions(&wo, "memagent", "1.4.0") {
		t.Fatal("FillDeploymentOptions left unversioned options as they were")
	}
	want := worker.DeploymentOptions{UseVersioning: true, Version: worker.WorkerDeploymentVersion{DeploymentName: "memagent", BuildID: "1.4.0"}}
	if wo.DeploymentOptions != want {
		t.Errorf("DeploymentOptions = %+v, want %+v", wo.DeploymentOptions, want)
	}
	host := worker.Options{DeploymentOptions: worker.DeploymentOptions{UseVersioning: true,
		Version: worker.WorkerDeploymentVersion{DeploymentName: "host", BuildID: "h1"}, DefaultVersioningBehavior: 1}}
	before := host.DeploymentOptions
	if FillDeploymentOptions(&host, "memagent", "1.4.0") || host.DeploymentOptions != before {
		t.Errorf("the host's deployment options became %+v", host.DeploymentOptions)
	}
}
