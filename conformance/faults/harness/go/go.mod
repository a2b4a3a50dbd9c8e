module retrygen.example/faultrunner

go 1.24
