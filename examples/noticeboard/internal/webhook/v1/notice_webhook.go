/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1

import (
	"context"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	boardv1 "example.com/noticeboard/api/v1"
)

// nolint:unused
// log is for logging in this package.
var noticelog = logf.Log.WithName("notice-resource")

// SetupNoticeWebhookWithManager registers the webhook for Notice in the manager.
func SetupNoticeWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &boardv1.Notice{}).
		WithValidator(&NoticeCustomValidator{}).
		WithDefaulter(&NoticeCustomDefaulter{}).
		Complete()
}

// MaxMessageLength is the longest message a Notice may carry, in characters.
const MaxMessageLength = 280

// +kubebuilder:webhook:path=/mutate-board-example-com-v1-notice,mutating=true,failurePolicy=fail,sideEffects=None,groups=board.example.com,resources=notices,verbs=create;update,versions=v1,name=mnotice-v1.kb.io,admissionReviewVersions=v1

// NoticeCustomDefaulter struct is responsible for setting default values on the custom resource of the
// Kind Notice when those are created or updated.
//
// NOTE: The +kubebuilder:object:generate=false marker prevents controller-gen from generating DeepCopy methods,
// as it is used only for temporary operations and does not need to be deeply copied.
type NoticeCustomDefaulter struct{}

// Default implements webhook.CustomDefaulter so a webhook will be registered for the Kind Notice.
func (d *NoticeCustomDefaulter) Default(_ context.Context, obj *boardv1.Notice) error {
	noticelog.Info("Defaulting for Notice", "name", obj.GetName())

	obj.Spec.Message = strings.TrimSpace(obj.Spec.Message)
	if obj.Spec.Message == "" {
		obj.Spec.Message = "Notice " + obj.GetName()
	}

	return nil
}

// +kubebuilder:webhook:path=/validate-board-example-com-v1-notice,mutating=false,failurePolicy=fail,sideEffects=None,groups=board.example.com,resources=notices,verbs=create;update,versions=v1,name=vnotice-v1.kb.io,admissionReviewVersions=v1

// NoticeCustomValidator struct is responsible for validating the Notice resource
// when it is created, updated, or deleted.
//
// NOTE: The +kubebuilder:object:generate=false marker prevents controller-gen from generating DeepCopy methods,
// as this struct is used only for temporary operations and does not need to be deeply copied.
type NoticeCustomValidator struct{}

// ValidateCreate implements webhook.CustomValidator so a webhook will be registered for the type Notice.
func (v *NoticeCustomValidator) ValidateCreate(_ context.Context, obj *boardv1.Notice) (admission.Warnings, error) {
	noticelog.Info("Validation for Notice upon creation", "name", obj.GetName())

	return nil, validate(obj)
}

// ValidateUpdate implements webhook.CustomValidator so a webhook will be registered for the type Notice.
func (v *NoticeCustomValidator) ValidateUpdate(_ context.Context, oldObj, newObj *boardv1.Notice) (admission.Warnings, error) {
	noticelog.Info("Validation for Notice upon update", "name", newObj.GetName())

	return nil, validate(newObj)
}

// ValidateDelete implements webhook.CustomValidator so a webhook will be registered for the type Notice.
func (v *NoticeCustomValidator) ValidateDelete(_ context.Context, obj *boardv1.Notice) (admission.Warnings, error) {
	noticelog.Info("Validation for Notice upon deletion", "name", obj.GetName())

	return nil, nil
}

// validate denies a message longer than MaxMessageLength characters.
func validate(obj *boardv1.Notice) error {
	if n := utf8.RuneCountInString(obj.Spec.Message); n > MaxMessageLength {
		return errors.NewInvalid(boardv1.GroupVersion.WithKind("Notice").GroupKind(), obj.GetName(), field.ErrorList{
			field.TooLong(field.NewPath("spec", "message"), n, MaxMessageLength),
		})
	}
	return nil
}
