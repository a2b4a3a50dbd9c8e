module retrygen.example/harness

go 1.21
